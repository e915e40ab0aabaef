// An engine's own settings where it publishes them (SGLang's /server_info): read by the
// poller once each time the engine turns ready, parsed from the documented shape, and
// held by the table in place of a configured or learnt batch size.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { Pool } from 'undici';
import { endpointRegistry } from '../../src/actors/endpoints/endpoint-registry.js';
import { healthPoller } from '../../src/actors/endpoints/health-poller.js';
import { ENDPOINT_REGISTRY, healthPollerAddress } from '../../src/messages/endpoints.js';
import { batchCapacitySource, EndpointTable } from '../../src/router/endpoint-table.js';
import { probeEndpoint } from '../../src/router/scrape/endpoint-probe.js';
import { parseSglangServerInfo } from '../../src/router/scrape/engine-settings.js';
import { ActorSystem } from '../../src/runtime/index.js';
import { startSimEngine } from '../../src/sim/index.js';

const captured = (): Record<string, unknown> & { internal_states: Record<string, unknown>[] } =>
  JSON.parse(readFileSync(fileURLToPath(new URL('../../../spec/fixtures/engine-info/sglang-server-info.json', import.meta.url)), 'utf8'));

test('a real SGLang /server_info: 128 running at once, chunks of 8192, first come first served', () => {
  assert.equal(parseSglangServerInfo(captured()), { batchSize: 128, stepBudget: 8192, enginePriority: null });
});

test('the schedulers\' resolved values win over the arguments as given', () => {
  const body = captured();
  body['max_running_requests'] = null; // not given: the engine sized it from its KV cache
  body.internal_states[0]!['effective_max_running_requests_per_dp'] = 96;
  assert.is(parseSglangServerInfo(body).batchSize, 96);
  delete body.internal_states[0]!['effective_max_running_requests_per_dp'];
  body.internal_states[0]!['max_running_requests'] = 80;
  assert.is(parseSglangServerInfo(body).batchSize, 80, 'a release without the effective value: the scheduler\'s own argument');
  body.internal_states = [];
  body['max_running_requests'] = 64;
  assert.is(parseSglangServerInfo(body).batchSize, 64, 'no scheduler states: the argument');
});

test('data parallel: the batch is every scheduler\'s summed, and unknown where the split is not said', () => {
  const body = captured();
  body['dp_size'] = 4;
  body.internal_states[0]!['effective_max_running_requests_per_dp'] = 32;
  assert.is(parseSglangServerInfo(body).batchSize, 128);
  delete body.internal_states[0]!['effective_max_running_requests_per_dp'];
  assert.is(parseSglangServerInfo(body).batchSize, null, 'max_running_requests 128 over 4 schedulers: per scheduler or in all is not said');
});

test('chunking off is no step budget; priority scheduling is higher values first unless told otherwise', () => {
  const body = captured();
  for (const o of [body, body.internal_states[0]!]) {
    o['chunked_prefill_size'] = -1;
    o['enable_priority_scheduling'] = true;
  }
  assert.equal(parseSglangServerInfo(body), { batchSize: 128, stepBudget: 0, enginePriority: 'higher-first' });
  body.internal_states[0]!['schedule_low_priority_values_first'] = true;
  assert.is(parseSglangServerInfo(body).enginePriority, 'lower-first');
});

test('a body that is not server info says nothing', () => {
  const none = { batchSize: null, stepBudget: null, enginePriority: null };
  for (const body of [null, 'ok', [], { status: 'ready' }, { max_running_requests: '128', chunked_prefill_size: 1.5, internal_states: 'x' }, { max_running_requests: 0 }]) {
    assert.equal(parseSglangServerInfo(body), none, JSON.stringify(body));
  }
});

test('the probe reads the sim\'s settings when it runs as SGLang, and only then', async () => {
  const base = { host: '127.0.0.1', port: 0, speed: 20, seed: 1, model: 'm', maxNumSeqs: 24, maxNumBatchedTokens: 2048, schedulingPolicy: 'priority' as const };
  const sims = await Promise.all([startSimEngine({ ...base, flavor: 'sglang' }), startSimEngine({ ...base, flavor: 'sglang', serverInfo: false }), startSimEngine({ ...base, flavor: 'vllm' })]);
  const pools = sims.map((s) => new Pool(s.url));
  try {
    const probes = await Promise.all(sims.map((_, i) => probeEndpoint({ id: String(i), models: ['m'], timeoutMs: 2_000 }, pools[i]!)));
    assert.equal(probes.map((p) => p.ready), [true, true, true]);
    assert.equal(probes.map((p) => p.settings), [{ batchSize: 24, stepBudget: 2048, enginePriority: 'lower-first' }, null, null]);
    const known = { batchSize: 7, stepBudget: null, enginePriority: null };
    assert.equal((await probeEndpoint({ id: '0', models: ['m'], timeoutMs: 2_000 }, pools[0]!, known)).settings, known, 'read once: a later probe carries what was read');
  } finally {
    await Promise.all(pools.map((p) => p.close()));
    await Promise.all(sims.map((s) => s.close()));
  }
});

test('the poller reads the settings once per stretch of readiness, and again after the engine was down', async () => {
  let up = true;
  let size = 48;
  let reads = 0;
  const server = createServer((req, res) => {
    if (req.url === '/health') res.writeHead(up ? 200 : 503).end();
    else if (req.url === '/v1/models') res.end(JSON.stringify({ object: 'list', data: [{ id: 'm', object: 'model', owned_by: 'sglang' }] }));
    else if (req.url === '/metrics') res.end('sglang:num_running_reqs{model_name="m"} 0\nsglang:num_queue_reqs{model_name="m"} 0\n');
    else if (req.url === '/server_info') {
      reads++;
      res.end(JSON.stringify({ max_running_requests: size, chunked_prefill_size: 4096, dp_size: 1 }));
    } else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const system = await ActorSystem.start({ threads: [{ name: 'telemetry' }], askTimeoutMs: 5_000 });
  const table = new EndpointTable({ connectTimeoutMs: 1_000, health: { cooldownFailures: 2, cooldownMs: 100, breakerFailures: 5, openMs: 100, maxOpenMs: 1_000 } });
  try {
    await system.spawn(endpointRegistry, { address: ENDPOINT_REGISTRY, args: { table } });
    const e = table.add({ id: 'a', url, models: ['m'], weight: 1, priority: 0, pool: null, batchSize: 16 });
    const poller = await system.spawn(healthPoller, { address: healthPollerAddress('a'), thread: 'telemetry', args: { id: 'a', url, models: ['m'], intervalMs: 600_000, timeoutMs: 1_000, registry: ENDPOINT_REGISTRY } });
    const poll = async (): Promise<void> => {
      await poller.ask({ type: 'poll-now' });
      await system.barrier();
    };
    await poll();
    await poll();
    assert.equal([reads, e.batchCapacity, batchCapacitySource(e), e.stepBudget], [1, 48, 'engine', 4096], 'read once, and it beats the configured 16');
    up = false;
    size = 32;
    await poll();
    assert.is(e.batchCapacity, 48, 'down: what it said stands until it says otherwise');
    up = true;
    await poll();
    await poll();
    assert.equal([reads, e.batchCapacity], [2, 32], 'back up, perhaps restarted with other flags: read again');
  } finally {
    await system.shutdown();
    await table.close();
    server.close();
  }
});

test.run();
