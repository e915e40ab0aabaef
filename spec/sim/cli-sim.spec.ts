// `llmgw run --role=sim` as a process: it says why when it cannot start, and it exits
// cleanly on SIGTERM.

import { suite } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { startProcess } from '../support/process.js';
import { startSim } from './helpers.js';

const test = suite('sim CLI (llmgw run --role=sim)');
const READY = /listening on (http:\/\/\S+)/;

async function startFailure(args: string[]): Promise<string> {
  try {
    const p = await startProcess(['run', '--role=sim', '--listen', '127.0.0.1:0', ...args], { waitFor: READY });
    await p.stop();
  } catch (err) {
    return (err as Error).message;
  }
  assert.unreachable(`started with ${args.join(' ')}`);
  return '';
}

test('a missing --model is refused, and startProcess rejects with the process stderr', async () => {
  const message = await startFailure([]);
  assert.match(message, /exited \(code 2/);
  assert.match(message, /--model is required with --role=sim/);
});

test('a KV cache too small for max_model_len is refused at start, as vLLM does', async () => {
  const message = await startFailure(['--model', 'm', '--num-gpu-blocks', '10', '--max-model-len', '1000']);
  assert.match(message, /max_model_len 1000 is larger than the KV cache holds \(10 blocks × 16 = 160 tokens\)/);
});

test('a bad --flavor is refused', async () => {
  assert.match(await startFailure(['--model', 'm', '--flavor', 'tgi']), /--flavor must be vllm or sglang/);
});

test('SIGTERM closes the engine and the process exits 0', async () => {
  const sim = await startSim('m', ['--speed', '10']);
  const res = await fetch(`${sim.url}/health`);
  assert.is(res.status, 200);
  await sim.stop();
  assert.is(sim.child.exitCode, 0);
});

test.run();
