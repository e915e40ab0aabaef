// The example configs are what an operator copies first, so they must load exactly as
// the server and the agent load them: a key renamed in a schema breaks this spec, not
// someone's first deployment.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { loadAgentConfig } from '../../src/agent/config/load.js';
import { LlmgwError } from '../../src/errors.js';
import { runCli } from '../support/cli.js';
import { repoFile } from './repo.js';

const serverExample = repoFile('examples/llmgw.yaml');
const agentExample = repoFile('examples/agent.yaml');
const dir = mkdtempSync(join(tmpdir(), 'llmgw-examples-'));
test.after(() => rmSync(dir, { recursive: true }));

/** A copy of `path` with `from` replaced once, as a typo would. */
function misspelt(path: string, from: string, to: string): string {
  const text = readFileSync(path, 'utf8');
  assert.ok(text.includes(from), `${path} contains ${from}`);
  const out = join(dir, `${to.replace(/\W/g, '')}.yaml`);
  writeFileSync(out, text.replace(from, to));
  return out;
}

test('examples/llmgw.yaml passes llmgw config check', async () => {
  const r = await runCli(['config', 'check', '--config', serverExample, '--no-env']);
  assert.is(r.stderr, '');
  assert.is(r.code, 0);
  assert.is(r.stdout, `ok: ${serverExample}\n`);
});

test("examples/llmgw.yaml points editors at the repository's schema", () => {
  const first = readFileSync(serverExample, 'utf8').split('\n')[0]!;
  const m = /^# yaml-language-server: \$schema=(\S+)$/.exec(first);
  assert.ok(m, `first line: ${first}`);
  assert.ok(existsSync(join(dirname(serverExample), m[1]!)), `${m[1]} exists beside the example`);
});

test('a misspelt key in the server example fails the check, naming it', async () => {
  const r = await runCli(['config', 'check', '--config', misspelt(serverExample, '    aliases: [llama, llama-8b]', '    alias: [llama, llama-8b]'), '--no-env']);
  assert.is(r.code, 1);
  assert.match(r.stderr, /models\[0\]: unknown key 'alias'/);
});

test("examples/agent.yaml loads with the agent's config loader", () => {
  const c = loadAgentConfig(agentExample);
  assert.is(c.state_dir, '/var/lib/llmgw/agent', 'the directory the systemd unit creates');
  assert.equal(c.fabrics, { 'ib-a': ['mlx5_0', 'mlx5_1', 'mlx5_2', 'mlx5_3'] });
});

test('a misspelt key in the agent example is refused, naming it', () => {
  const path = misspelt(agentExample, 'drain_grace_ms:', 'drain_grace:');
  try {
    loadAgentConfig(path);
  } catch (err) {
    assert.ok(err instanceof LlmgwError);
    assert.is(err.code, 'LLMGW_CONFIG_INVALID');
    assert.match(err.message, /unknown key 'drain_grace'/);
    return;
  }
  assert.unreachable('the misspelt agent config was accepted');
});

test.run();
