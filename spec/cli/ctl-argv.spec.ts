import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { hoistCtlOptions } from '../../src/cli/ctl-argv.js';

test('connection options before the ctl subcommand move behind it', () => {
  assert.equal(hoistCtlOptions(['ctl', '--admin', 'http://a:1', 'actors', '--json']), ['ctl', 'actors', '--admin', 'http://a:1', '--json']);
  assert.equal(hoistCtlOptions(['ctl', '--admin=http://a:1', '--token', 't', 'actors']), ['ctl', 'actors', '--admin=http://a:1', '--token', 't']);
});

test('they move behind every word of a command of several words, so clipanion finds its path', () => {
  assert.equal(hoistCtlOptions(['ctl', '--admin', 'x', 'orgs', 'create', 'acme']), ['ctl', 'orgs', 'create', 'acme', '--admin', 'x']);
  assert.equal(hoistCtlOptions(['ctl', '--token=t', 'keys', 'create', '--project', 'chat']), ['ctl', 'keys', 'create', '--token=t', '--project', 'chat']);
});

test('other commands and the usual order are left alone', () => {
  assert.equal(hoistCtlOptions(['ctl', 'actors', '--admin', 'x']), ['ctl', 'actors', '--admin', 'x']);
  assert.equal(hoistCtlOptions(['run', '--admin', 'x']), ['run', '--admin', 'x']);
  assert.equal(hoistCtlOptions(['ctl', '--json', 'actors']), ['ctl', '--json', 'actors'], 'an unknown option stops the hoisting; clipanion reports it');
  assert.equal(hoistCtlOptions(['ctl', '--admin', 'x']), ['ctl', '--admin', 'x'], 'no subcommand: clipanion says what is missing');
});

test.run();
