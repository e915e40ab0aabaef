import { rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { loadAgentConfig } from '../../src/agent/config/load.js';
import type { LlmgwError } from '../../src/errors.js';
import { tempDir } from './supervisor/helpers.js';

const dir = tempDir('llmgw-agent-config-');
let files = 0;

function file(text: string): string {
  const path = join(dir, `agent-${files++}.yaml`);
  writeFileSync(path, text);
  return path;
}

test.after(() => rmSync(dir, { recursive: true }));

function problems(text: string): string[] {
  try {
    loadAgentConfig(file(text));
  } catch (err) {
    assert.is((err as LlmgwError).code, 'LLMGW_CONFIG_INVALID');
    return (err as LlmgwError).message.split('\n').map((l) => l.replace(/^.*agent-\d+\.yaml: /, ''));
  }
  return assert.unreachable('the config was accepted') as never;
}

test('no config file means every default, the state directory made absolute', () => {
  const c = loadAgentConfig(undefined);
  assert.is(c.listen, '127.0.0.1:4100');
  assert.is(c.state_dir, resolve('.llmgw-state/agent'));
  assert.is(c.stop_timeout_ms, 60_000);
  assert.equal(c.engines, { vllm: 'vllm', python: 'python3', ray: 'ray' });
  assert.equal(c.fabrics, {});
  assert.ok(Object.isFrozen(c.engines));
});

test('the file and --listen are applied', () => {
  const c = loadAgentConfig(file('stop_timeout_ms: 5000\nengines: { vllm: /opt/vllm/bin/vllm }\nfabrics: { ib-a: [mlx5_0, mlx5_1] }\n'), { listen: '[::1]:4200' });
  assert.is(c.listen, '[::1]:4200');
  assert.is(c.stop_timeout_ms, 5_000);
  assert.is(c.engines.vllm, '/opt/vllm/bin/vllm');
  assert.is(c.engines.ray, 'ray');
  assert.equal(c.fabrics, { 'ib-a': ['mlx5_0', 'mlx5_1'] });
});

test('every problem is reported at once, each with its path and a reason', () => {
  assert.equal(problems('stop_timout_ms: 5\nsettle_ms: 0\nengines: { vllm: "" }\n'), [
    "unknown key 'stop_timout_ms' (did you mean 'stop_timeout_ms'?)",
    'settle_ms: must be ≥ 1',
    'engines.vllm: must not be empty',
  ]);
});

test('a control interface off loopback, a fabric without HCAs and an HCA on two fabrics are refused', () => {
  assert.equal(problems('listen: "10.0.0.5:4100"\nfabrics: { ib-a: [mlx5_0], ib-b: [mlx5_0], ib-c: [] }\n'), [
    'listen: must be a loopback address (127.0.0.1, ::1, localhost), not 10.0.0.5: the control interface has no authentication and starts processes',
    'fabrics: HCA mlx5_0 is claimed by both ib-a and ib-b: an adapter is cabled to one fabric; fix the label that is wrong',
    'fabrics: fabric ib-c lists no HCAs: name its adapters (e.g. [mlx5_0, mlx5_1]) or remove it',
  ]);
});

test('an unreadable file says why', () => {
  assert.throws(() => loadAgentConfig('/nonexistent/agent.yaml'), /cannot read the config file: no such file or directory \(ENOENT\)/);
});

test.run();
