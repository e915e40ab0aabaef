// `llmgw run --role=sim` as a process: it says why when it cannot start, and it exits
// cleanly on SIGTERM.

import { suite } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { request } from 'undici';
import { startProcess } from '../support/process.js';
import { until } from '../support/until.js';
import { metric, startSim, type SimProcess } from './helpers.js';

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

test('a bad --gauges or --gauge-lag-ms is refused', async () => {
  assert.match(await startFailure(['--model', 'm', '--gauges', 'lagged']), /--gauges must be live or step, not 'lagged'/);
  assert.match(await startFailure(['--model', 'm', '--gauge-lag-ms', 'soon']), /--gauge-lag-ms must be a whole number ≥ 0/);
});

test('--max-num-batched-tokens reaches the engine: a budget under max_num_seqs is refused, 0 (none) is not', async () => {
  assert.match(await startFailure(['--model', 'm', '--max-num-batched-tokens', '100']), /maxNumBatchedTokens \(100\) must be ≥ maxNumSeqs \(256\)/);
  const sim = await startSim('m', ['--max-num-batched-tokens', '0']);
  await sim.stop();
});

test('--step-us sets the step time: an answer\'s tokens come a step apart in the engine\'s own time; a bad one is refused', async () => {
  assert.match(await startFailure(['--model', 'm', '--step-us', '80000,300']), /--step-us must be three numbers ≥ 0 .* not '80000,300'/);
  assert.match(await startFailure(['--model', 'm', '--step-us', '0,1,1']), /--step-us must be three numbers/);
  // 40 ms a step and nothing for tokens: every inter-token gap is exactly 0.04 s of engine time.
  const sim = await startSim('m', ['--step-us', '40000,0,0']);
  try {
    const res = await request(`${sim.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', prompt: 'hello there', max_tokens: 4 }) });
    assert.is(res.statusCode, 200);
    await res.body.dump();
    const sum = await metric(sim.url, 'vllm:inter_token_latency_seconds_sum');
    const count = await metric(sim.url, 'vllm:inter_token_latency_seconds_count');
    assert.is(count, 3);
    assert.ok(Math.abs(sum / count - 0.04) < 1e-9, `mean inter-token latency ${sum / count} s, not 0.04 s`);
  } finally {
    await sim.stop();
  }
});

/** Sends a streaming completion; resolves when its headers came, which the sim sends with the first token. */
function streaming(sim: SimProcess, signal: AbortSignal): Promise<unknown> {
  return request(`${sim.url}/v1/completions`, { method: 'POST', signal, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', prompt: 'hello there', max_tokens: 5000, stream: true }) }).catch(() => undefined);
}

test('--gauges live shows a request in the gauges before its first step ends (at this speed a step lasts a minute)', async () => {
  const sim = await startSim('m', ['--gauges', 'live', '--speed', '0.0001']);
  try {
    const hangUp = new AbortController();
    const answered = streaming(sim, hangUp.signal);
    await until(async () => (await metric(sim.url, 'vllm:num_requests_running')) === 1, 'the running gauge at 1');
    hangUp.abort();
    await answered;
  } finally {
    await sim.stop();
  }
});

test('--gauge-lag-ms holds the gauges until its grid point: a streaming request is not yet shown running', async () => {
  const sim = await startSim('m', ['--gauges', 'live', '--gauge-lag-ms', '600000', '--max-model-len', '6000']);
  try {
    const hangUp = new AbortController();
    const answered = streaming(sim, hangUp.signal);
    await until(async () => (await metric(sim.url, 'vllm:generation_tokens_total')) > 0, 'its first token');
    assert.is(await metric(sim.url, 'vllm:num_requests_running'), 0, 'the first grid point is ten minutes after the start');
    hangUp.abort();
    await answered;
  } finally {
    await sim.stop();
  }
});

test('SIGTERM closes the engine and the process exits 0', async () => {
  const sim = await startSim('m', ['--speed', '10']);
  const res = await fetch(`${sim.url}/health`);
  assert.is(res.status, 200);
  await sim.stop();
  assert.is(sim.child.exitCode, 0);
});

test.run();
