// startSimEngine inside the caller's process, as the server role runs it (possibly in a
// worker thread): no shared metrics registry, no process-wide handlers, a clean close.

import { suite } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { request } from 'undici';
import { startSimEngine } from '../../src/sim/index.js';
import { until } from '../support/until.js';
import { scrape, value, words } from './helpers.js';

const test = suite('sim in-process (startSimEngine)');

const base = { host: '127.0.0.1', port: 0, flavor: 'vllm' as const, speed: 20, seed: 1 };

test('two engines in one process keep their own metrics and install no process handlers', async () => {
  const events = ['SIGTERM', 'SIGINT', 'exit', 'uncaughtException', 'unhandledRejection'] as const;
  const before = events.map((e) => process.listenerCount(e));
  const a = await startSimEngine({ ...base, model: 'alpha' });
  const b = await startSimEngine({ ...base, model: 'beta', flavor: 'sglang' });
  try {
    assert.equal(events.map((e) => process.listenerCount(e)), before);
    assert.is.not(a.port, b.port);
    assert.is(a.url, `http://127.0.0.1:${a.port}`);
    const res = await request(`${a.url}/v1/completions`, { method: 'POST', body: JSON.stringify({ prompt: 'hello', max_tokens: 3 }) });
    assert.is(res.statusCode, 200);
    await res.body.dump();
    const ma = await scrape(a.url);
    const mb = await scrape(b.url);
    assert.is(value(ma.samples, 'vllm:generation_tokens_total', { model_name: 'alpha' }), 3);
    assert.not.match(ma.text, /beta|sglang:/);
    assert.not.match(mb.text, /alpha|vllm:/);
    assert.is(value(mb.samples, 'sglang:generation_tokens_total'), 0);
    assert.is(a.engine.counters.generationTokens, 3, 'the engine object is the one serving');
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});

test('close() mid-stream ends the stream with an error event, then [DONE], and frees the port', async () => {
  const sim = await startSimEngine({ ...base, model: 'gamma' });
  const res = await request(`${sim.url}/v1/chat/completions`, {
    method: 'POST',
    body: JSON.stringify({ messages: [{ role: 'user', content: words(50, 1) }], max_tokens: 20000, stream: true }),
  });
  let raw = '';
  const done = (async () => {
    for await (const chunk of res.body) raw += chunk;
  })();
  await until(() => raw.includes('"content"'), 'first tokens');
  await sim.close();
  await done;
  assert.match(raw, /data: \{"error":\{"message":"The engine is shutting down","type":"ServiceUnavailableError","param":null,"code":503\}\}\n\ndata: \[DONE\]\n\n$/);
  assert.is(sim.engine.counters.finished.abort, 1);
  const refused = await request(`${sim.url}/health`).catch((err: unknown) => err);
  assert.instance(refused, Error);
});

test('the request\'s priority reaches the engine under a priority policy, and is refused without one, as vLLM does', async () => {
  const fcfs = await startSimEngine({ ...base, model: 'delta' });
  const prio = await startSimEngine({ ...base, model: 'delta', schedulingPolicy: 'priority' });
  const seen: number[] = [];
  prio.engine.addObserver({ onScheduled: (seq) => seen.push(seq.priority) });
  try {
    const post = (url: string, priority: unknown) => request(`${url}/v1/completions`, { method: 'POST', body: JSON.stringify({ prompt: 'hello', max_tokens: 2, priority }) });
    const refused = await post(fcfs.url, 3);
    assert.is(refused.statusCode, 400);
    assert.match(JSON.stringify(await refused.body.json()), /Got priority 3 but Priority scheduling is not enabled/);
    const zero = await post(fcfs.url, 0);
    assert.is(zero.statusCode, 200, 'priority 0 is the default, accepted by either policy');
    await zero.body.dump();
    const bad = await post(prio.url, 1.5);
    assert.is(bad.statusCode, 400);
    assert.match(JSON.stringify(await bad.body.json()), /'priority' must be an integer/);
    const ok = await post(prio.url, -2);
    assert.is(ok.statusCode, 200);
    await ok.body.dump();
    assert.equal(seen, [-2]);
  } finally {
    await Promise.all([fcfs.close(), prio.close()]);
  }
});

test('bad options are refused with a message naming the option', async () => {
  for (const [opts, message] of [
    [{ model: '' }, /model must be a non-empty string/],
    [{ model: 'm', speed: 0 }, /speed must be a number > 0/],
    [{ model: 'm', numGpuBlocks: 4, maxModelLen: 100 }, /larger than the KV cache holds/],
    [{ model: 'm', flavor: 'tgi' }, /flavor must be vllm or sglang/],
  ] as const) {
    const err = await startSimEngine({ ...base, ...(opts as object), model: (opts as { model: string }).model } as never).catch((e: unknown) => e);
    assert.instance(err, Error);
    assert.match((err as Error).message, message);
    assert.is((err as { code?: string }).code, 'LLMGW_INVALID_REQUEST');
  }
});

test.run();
