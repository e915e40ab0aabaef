import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { hoistCtlOptions } from '../../src/cli/ctl-argv.js';

test('connection options before the ctl subcommand move behind it', () => {
  assert.equal(hoistCtlOptions(['ctl', '--admin', 'http://a:1', 'actors', '--json']), ['ctl', 'actors', '--admin', 'http://a:1', '--json']);
  assert.equal(hoistCtlOptions(['ctl', '--admin=http://a:1', '--token', 't', 'actors']), ['ctl', 'actors', '--admin=http://a:1', '--token', 't']);
});

test('other commands and the usual order are left alone', () => {
  assert.equal(hoistCtlOptions(['ctl', 'actors', '--admin', 'x']), ['ctl', 'actors', '--admin', 'x']);
  assert.equal(hoistCtlOptions(['run', '--admin', 'x']), ['run', '--admin', 'x']);
  assert.equal(hoistCtlOptions(['ctl', '--json', 'actors']), ['ctl', '--json', 'actors'], 'an unknown option stops the hoisting; clipanion reports it');
  assert.equal(hoistCtlOptions(['ctl', '--admin', 'x']), ['ctl', '--admin', 'x'], 'no subcommand: clipanion says what is missing');
});

test.run();
