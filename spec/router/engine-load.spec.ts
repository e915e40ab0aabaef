import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { endpointRegistry } from '../../src/actors/endpoints/endpoint-registry.js';
import { healthPoller } from '../../src/actors/endpoints/health-poller.js';
import { EndpointTable } from '../../src/router/endpoint-table.js';
import { largestStep, MetricsParseError, parseEngineLoad } from '../../src/router/scrape/engine-load.js';
import { ENDPOINT_REGISTRY, healthPollerAddress } from '../../src/messages/endpoints.js';
import { ActorSystem } from '../../src/runtime/index.js';
import { until } from '../support/until.js';

const FIXTURES = fileURLToPath(new URL('../../../spec/fixtures/metrics/', import.meta.url));
const capture = (name: string): string => readFileSync(FIXTURES + name, 'utf8');

test('a real SGLang capture: queue depth, running batch and token usage', () => {
  assert.equal(parseEngineLoad(capture('sglang-llama-3.1-8b.prom')), { waiting: 2826, running: 162, kvUsage: 0.28, itl: { sum: 866964.5791549598, count: 7.400757e6 } });
});

test('a real vLLM v1 capture', () => {
  assert.equal(parseEngineLoad(capture('vllm-gemma-4-31b.prom')), { waiting: 0, running: 1, kvUsage: 0.0798685 });
});

test('a vLLM capture without a waiting series reads zero waiting, and the tiny KV fraction is a fraction', () => {
  assert.equal(parseEngineLoad(capture('vllm-0.10-glm-4.5.prom')), { waiting: 0, running: 8, kvUsage: 9.75010481363281e-6 });
});

test('waiting_by_reason is not counted on top of waiting (a prefix of its name)', () => {
  const text = `vllm:num_requests_waiting{engine="0",model_name="m"} 3.0
vllm:num_requests_waiting_by_reason{engine="0",model_name="m",reason="capacity"} 2.0
vllm:num_requests_waiting_by_reason{engine="0",model_name="m",reason="deferred"} 1.0
vllm:num_requests_running{engine="0",model_name="m"} 4.0
`;
  assert.equal(parseEngineLoad(text), { waiting: 3, running: 4, kvUsage: null });
});

test('data-parallel engines add up; KV usage is the fullest engine', () => {
  const text = `vllm:num_requests_waiting{engine="0",model_name="m"} 3
vllm:num_requests_waiting{engine="1",model_name="m"} 5
vllm:num_requests_running{engine="0",model_name="m"} 2
vllm:num_requests_running{engine="1",model_name="m"} 2
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.5
vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.75
`;
  assert.equal(parseEngineLoad(text), { waiting: 8, running: 4, kvUsage: 0.75 });
});

test('SGLang series repeated per tensor-parallel rank count once; the sglang_ spelling is read too', () => {
  const label = (tp: number): string => `model_name="m",tp_rank="${tp}",pp_rank="0"`;
  const text = [0, 1, 2, 3].map((tp) => `sglang_num_queue_reqs{${label(tp)}} 7.0\nsglang_num_running_reqs{${label(tp)}} 2.0\nsglang_token_usage{${label(tp)}} 0.4`).join('\n');
  assert.equal(parseEngineLoad(text), { waiting: 7, running: 2, kvUsage: 0.4 });
});

test('the deprecated vLLM KV name is read; NaN samples are skipped', () => {
  const text = 'vllm:num_requests_running{model_name="m"} 1\nvllm:num_requests_waiting{model_name="m"} NaN\nvllm:gpu_cache_usage_perc{model_name="m"} 0.35\n';
  assert.equal(parseEngineLoad(text), { waiting: 0, running: 1, kvUsage: 0.35 });
});

test('inter-token latency totals, under each name, summed over data-parallel engines', () => {
  const v = `vllm:num_requests_running{engine="0",model_name="m"} 1
vllm:inter_token_latency_seconds_sum{engine="0",model_name="m"} 1.5
vllm:inter_token_latency_seconds_count{engine="0",model_name="m"} 100
vllm:inter_token_latency_seconds_sum{engine="1",model_name="m"} 0.5
vllm:inter_token_latency_seconds_count{engine="1",model_name="m"} 20
vllm:inter_token_latency_seconds_bucket{engine="1",le="0.01",model_name="m"} 20
`;
  assert.equal(parseEngineLoad(v).itl, { sum: 2, count: 120 });
  const old = 'vllm:num_requests_running 1\nvllm:time_per_output_token_seconds_sum 3\nvllm:time_per_output_token_seconds_count 60\n';
  assert.equal(parseEngineLoad(old).itl, { sum: 3, count: 60 }, 'the name before vLLM 0.11');
  assert.equal(parseEngineLoad('sglang:num_running_reqs 1\nsglang:inter_token_latency_seconds_sum 1\nsglang:inter_token_latency_seconds_count 10\n').itl, { sum: 1, count: 10 });
  assert.is(parseEngineLoad('vllm:num_requests_running 1\n').itl, undefined, 'absent, not zero');
});

/** vLLM v1's tokens-per-step histogram for one engine: `counts` are per bucket (not cumulative) over its fixed bounds, then +Inf. */
function iterationTokens(engine: string, counts: number[], sum: number): string {
  const bounds = [1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384];
  let total = 0;
  const lines = bounds.map((b, i) => {
    total += counts[i] ?? 0;
    return `vllm:iteration_tokens_total_bucket{engine="${engine}",le="${b}.0",model_name="m"} ${total}.0`;
  });
  total += counts[bounds.length] ?? 0;
  lines.push(`vllm:iteration_tokens_total_bucket{engine="${engine}",le="+Inf",model_name="m"} ${total}.0`);
  lines.push(`vllm:iteration_tokens_total_count{engine="${engine}",model_name="m"} ${total}.0`);
  lines.push(`vllm:iteration_tokens_total_sum{engine="${engine}",model_name="m"} ${sum}.0`);
  return lines.join('\n') + '\n';
}

test('tokens per step: totals summed over data-parallel engines, and the smallest bound no step exceeded', () => {
  const running = 'vllm:num_requests_running{engine="0",model_name="m"} 4\n';
  const largest = (text: string): number | null => largestStep(parseEngineLoad(running + text).steps!);
  // Engine 0: 10 decode steps of 4 tokens, 3 steps that spent a budget of 8192.
  const e0 = iterationTokens('0', [0, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3], 10 * 4 + 3 * 8192);
  const both = parseEngineLoad(running + e0).steps!;
  assert.equal([both.tokens, both.count], [24_616, 13]);
  assert.equal(both.buckets.slice(0, 3), [[1, 0], [8, 10], [16, 10]], 'cumulative, bounds ascending');
  assert.is(both.buckets.length, 13, '+Inf left out');
  assert.is(largest(e0), 8192);
  // Engine 1: one step of 3000 tokens.
  const e1 = iterationTokens('1', [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], 3000);
  const summed = parseEngineLoad(running + e0 + e1).steps!;
  assert.equal([summed.tokens, summed.count, summed.buckets[10]], [27_616, 14, [4096, 11]], 'summed per bound over the engines');
  assert.is(largest(e0 + e1), 8192);
  assert.is(largest(e1), 4096, 'a budget of 3000 reads as the bound above it');
  // No chunked prefill: a step of 30,000 tokens passes every finite bound.
  assert.is(largest(iterationTokens('0', [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], 30_000)), null);
  assert.is(largest(iterationTokens('0', [], 0)), null, 'no step yet');
  assert.is(parseEngineLoad(running).steps, undefined, 'absent where the engine does not publish it (SGLang, older vLLM)');
});

test('the largest step between two scrapes: the steps taken since the first, not the engine\'s life', () => {
  const running = 'vllm:num_requests_running 4\n';
  const at = (counts: number[]) => parseEngineLoad(running + iterationTokens('0', counts, 0)).steps!;
  // A burst of 3 budget-sized steps, then 40 decode steps of at most 32 tokens.
  const before = at([0, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3]);
  const after = at([0, 30, 0, 20, 0, 0, 0, 0, 0, 0, 0, 3]);
  assert.is(largestStep(after), 8192, 'over its life');
  assert.is(largestStep(after, before), 32, 'since the scrape before');
  assert.is(largestStep(after, after), null, 'no step between them');
  assert.is(largestStep(before, after), null, 'counts that went back: a restart says nothing');
});

test('a page that is not an engine is an error that says what is missing', () => {
  assert.throws(() => parseEngineLoad('# HELP process_cpu_seconds_total x\nprocess_cpu_seconds_total 12.5\n'), (e: unknown) => e instanceof MetricsParseError && /--enable-metrics|metrics enabled/.test((e as Error).message));
  assert.throws(() => parseEngineLoad('<!doctype html><html></html>'), (e: unknown) => e instanceof MetricsParseError);
});

// The poller against a server that answers like the engine in each capture.
function fakeEngine(model: string, metrics: string): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    if (req.url === '/health') res.end();
    else if (req.url === '/v1/models') res.end(JSON.stringify({ object: 'list', data: [{ id: model, object: 'model' }] }));
    else if (req.url === '/metrics') res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(metrics);
    else res.writeHead(404).end();
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })));
}

test('the poller reads queue depth and KV usage from a real vLLM and a real SGLang /metrics, and the table holds them', async () => {
  const vllm = await fakeEngine('RedHatAI/gemma-4-31B-it-NVFP4', capture('vllm-gemma-4-31b.prom'));
  const sglang = await fakeEngine('meta-llama/Llama-3.1-8B-Instruct', capture('sglang-llama-3.1-8b.prom'));
  const system = await ActorSystem.start({ threads: [{ name: 'telemetry' }], askTimeoutMs: 5_000 });
  const table = new EndpointTable({ connectTimeoutMs: 1_000, health: { cooldownFailures: 2, cooldownMs: 100, breakerFailures: 5, openMs: 100, maxOpenMs: 1_000 } });
  try {
    await system.spawn(endpointRegistry, { address: ENDPOINT_REGISTRY, args: { table } });
    const cases = [
      { id: 'v', url: vllm.url, model: 'RedHatAI/gemma-4-31B-it-NVFP4', load: { waiting: 0, running: 1, kvUsage: 0.0798685 } },
      { id: 's', url: sglang.url, model: 'meta-llama/Llama-3.1-8B-Instruct', load: { waiting: 2826, running: 162, kvUsage: 0.28, itl: { sum: 866964.5791549598, count: 7.400757e6 } } },
    ];
    for (const c of cases) {
      table.add({ id: c.id, url: c.url, models: [c.model], weight: 1, priority: 0, pool: null });
      const poller = await system.spawn(healthPoller, {
        address: healthPollerAddress(c.id),
        thread: 'telemetry',
        args: { id: c.id, url: c.url, models: [c.model], intervalMs: 60_000, timeoutMs: 1_000, registry: ENDPOINT_REGISTRY },
      });
      const probe = await poller.ask({ type: 'poll-now' });
      assert.is(probe.ready, true, probe.reason ?? '');
      assert.equal(probe.load, c.load);
      assert.is(probe.loadError, null);
    }
    await system.barrier();
    assert.equal(table.get('s')!.load, cases[1]!.load);
    assert.equal(table.get('v')!.load, cases[0]!.load);
  } finally {
    await system.shutdown();
    await table.close();
    vllm.server.close();
    sglang.server.close();
  }
});

test('the router\'s traffic between polls has the poller scrape /metrics alone, and the table holds what it read', async () => {
  let metrics = 'vllm:num_requests_running{engine="0",model_name="m"} 1\nvllm:num_requests_waiting{engine="0",model_name="m"} 0\n';
  const hits = { health: 0, metrics: 0 };
  const server = createServer((req, res) => {
    if (req.url === '/health') hits.health++;
    if (req.url === '/metrics') hits.metrics++;
    if (req.url === '/health') res.end();
    else if (req.url === '/v1/models') res.end(JSON.stringify({ object: 'list', data: [{ id: 'm', object: 'model' }] }));
    else if (req.url === '/metrics') res.end(metrics);
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const system = await ActorSystem.start({ threads: [{ name: 'telemetry' }], askTimeoutMs: 5_000 });
  const table = new EndpointTable({
    connectTimeoutMs: 1_000,
    health: { cooldownFailures: 2, cooldownMs: 100, breakerFailures: 5, openMs: 100, maxOpenMs: 1_000 },
    refresh: { ms: 20, kvCeiling: 0.95, ask: (id) => system.ref(healthPollerAddress(id)).tell({ type: 'scrape' }) },
  });
  try {
    await system.spawn(endpointRegistry, { address: ENDPOINT_REGISTRY, args: { table } });
    const e = table.add({ id: 'a', url, models: ['m'], weight: 1, priority: 0, pool: null });
    const poller = await system.spawn(healthPoller, { address: healthPollerAddress('a'), thread: 'telemetry', args: { id: 'a', url, models: ['m'], intervalMs: 600_000, timeoutMs: 1_000, registry: ENDPOINT_REGISTRY } });
    await poller.ask({ type: 'poll-now' });
    await system.barrier();
    assert.is(e.load?.running, 1);
    // Requests come and go; the next poll is ten minutes away.
    for (const running of [7, 8, 9]) {
      metrics = metrics.replace(/running\{engine="0",model_name="m"\} \d+/, `running{engine="0",model_name="m"} ${running}`);
      await until(() => {
        table.lease(e, Date.now()).release(Date.now());
        return e.load?.running === running;
      }, `a scrape between polls showing ${running} running`);
    }
    assert.ok(hits.health <= 2, `three refreshes read /metrics alone (/health read ${hits.health} times, /metrics ${hits.metrics})`);
  } finally {
    await system.shutdown();
    await table.close();
    server.close();
  }
});

test.run();
