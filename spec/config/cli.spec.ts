import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { ConfigCheckCommand } from '../../src/cli/commands/config-check.js';
import { ConfigSchemaCommand } from '../../src/cli/commands/config-schema.js';
import { configSchemaJson } from '../../src/config/index.js';
import { runInProcess } from '../support/cli.js';
import { BASE, tempFile } from './helpers.js';

const run = (argv: string[], env: NodeJS.ProcessEnv = {}) => runInProcess([ConfigCheckCommand, ConfigSchemaCommand], argv, env);

test('config schema prints the schema', async () => {
  const r = await run(['config', 'schema']);
  assert.is(r.code, 0);
  assert.is(r.stdout, configSchemaJson());
});

test('config check prints ok for a valid file', async () => {
  const path = tempFile('llmgw.yaml', BASE);
  const r = await run(['config', 'check', '--config', path]);
  assert.is(r.code, 0);
  assert.is(r.stdout, `ok: ${path}\n`);
  assert.is(r.stderr, '');
});

test('config check prints every problem and exits 1', async () => {
  const path = tempFile('llmgw.yaml', BASE.replace('tp: 1', 'tp: 0') + 'log_level: loud\n');
  const r = await run(['config', 'check', '--config', path]);
  assert.is(r.code, 1);
  assert.is(r.stdout, '');
  assert.is(r.stderr, `${path}: log_level: must be one of debug, info, warn, error, silent\n${path}: models[2].profiles[0].tp: must be ≥ 1\n`);
});

test('config check refuses an empty file: it would serve no model', async () => {
  const path = tempFile('llmgw.yaml', '');
  const r = await run(['config', 'check', '--config', path]);
  assert.is(r.code, 1);
  assert.match(r.stderr, `${path}: models: lists no model, so nothing would be served`);
});

test('config check applies the environment, unless --no-env', async () => {
  const path = tempFile('llmgw.yaml', BASE);
  const bad = await run(['config', 'check', '--config', path], { LLMGW_ROUTER__MAX_BODY_BYTES: 'lots' });
  assert.is(bad.code, 1);
  assert.is(bad.stderr, 'env LLMGW_ROUTER__MAX_BODY_BYTES: must be an integer, got "lots"\n');
  const ignored = await run(['config', 'check', '--config', path, '--no-env'], { LLMGW_ROUTER__MAX_BODY_BYTES: 'lots' });
  assert.is(ignored.code, 0);
});

test('config check says why a file cannot be read', async () => {
  const path = tempFile('llmgw.yaml', '') + '.missing';
  const r = await run(['config', 'check', '--config', path]);
  assert.is(r.code, 1);
  assert.is(r.stderr, `${path}: cannot read the config file: no such file or directory (ENOENT)\n`);
});

test('config check with no --config checks LLMGW_CONFIG, else the embedded default', async () => {
  const path = tempFile('llmgw.yaml', 'log_level: loud\n');
  const r = await run(['config', 'check'], { LLMGW_CONFIG: path });
  assert.is(r.code, 1);
  assert.match(r.stderr, `${path}: log_level:`);
  const d = await run(['config', 'check']);
  assert.is(d.code, 0);
  assert.is(d.stdout, 'ok: (embedded default)\n');
});

test.run();
