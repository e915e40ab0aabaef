import * as assert from 'uvu/assert';
import { Worker } from 'node:worker_threads';
import type { MetricValue } from 'prom-client';
import { createAgentStreamClient, type AgentMessageInit, type AgentStreamClient } from '../../src/agent/stream/agent-stream-client.js';
import { threadCpuMs } from '../../src/control/control-metrics.js';
import { PushQueue } from '../../src/net/push-queue.js';
import { startControlPlane, type RunningControlPlane } from '../support/control-plane.js';
import { suite } from '../support/uvu.js';
import { until } from '../support/until.js';

// The control plane's metrics, observed through a real agent stream into the control
// actor on its own thread and read back as /metrics would merge them.

const test = suite('control plane: heartbeat lag, connected agents and thread cost on /metrics');

let cp: RunningControlPlane;
let client: AgentStreamClient;

test.before(async () => {
  cp = await startControlPlane();
  client = createAgentStreamClient({ url: cp.url, insecure: true });
});

test.after(async () => {
  client.close();
  await cp.close();
});

async function values(name: string): Promise<MetricValue<string>[]> {
  const m = (await cp.system.metrics()).getSingleMetric(name);
  assert.ok(m, `${name} is registered`);
  return (await m.get()).values;
}

const sample = (vs: MetricValue<string>[], metricName: string, le?: number): number =>
  vs.find((v) => (v as { metricName?: string }).metricName === metricName && (le === undefined || v.labels.le === le))?.value ?? NaN;

test('a heartbeat stamped 300 ms ago is observed with its lag; the agent counts as connected while its stream is open', async () => {
  const out = new PushQueue<AgentMessageInit>();
  out.push({ body: { case: 'register', value: { nodeId: 'node-a', agentVersion: 'spec' } } });
  const ended = (async () => {
    for await (const _ of client.open(out)) void _;
  })();
  await until(async () => (await values('llmgw_control_agents_connected'))[0]?.value === 1, 'the agent connected');
  out.push({ body: { case: 'heartbeat', value: { unixMs: BigInt(Date.now() - 300) } } });
  // A heartbeat without a stamp says nothing about lag and is not observed.
  out.push({ body: { case: 'heartbeat', value: {} } });
  await until(async () => sample(await values('llmgw_control_heartbeat_lag_seconds'), 'llmgw_control_heartbeat_lag_seconds_count') === 1, 'one heartbeat observed');
  const lag = await values('llmgw_control_heartbeat_lag_seconds');
  const sum = sample(lag, 'llmgw_control_heartbeat_lag_seconds_sum');
  assert.ok(sum >= 0.3 && sum < 10, `lag ${sum} s`);
  assert.is(sample(lag, 'llmgw_control_heartbeat_lag_seconds_bucket', 0.25), 0, 'not in a bucket below its lag');
  assert.is(sample(lag, 'llmgw_control_heartbeat_lag_seconds_bucket', 10), 1);
  out.end();
  await ended;
  await until(async () => (await values('llmgw_control_agents_connected'))[0]?.value === 0, 'the agent counted as gone');
});

test("the control thread's busy time is counted", async () => {
  const busy = (await values('llmgw_control_thread_busy_seconds_total'))[0]?.value ?? 0;
  assert.ok(busy > 0, `busy ${busy} s`);
  assert.ok(((await values('llmgw_control_thread_cpu_seconds_total'))[0]?.value ?? -1) >= 0);
});

test('thread CPU time is the calling thread\'s, not the process\'s', async () => {
  if (process.platform !== 'linux') return;
  const mine = threadCpuMs()!;
  const process0 = process.cpuUsage();
  // Another thread spins until the process has used 300 ms of CPU more, while this one waits for it.
  const spin = 'const c = process.cpuUsage(); for (let d = { user: 0, system: 0 }; d.user + d.system < 300000; d = process.cpuUsage(c)); require("node:worker_threads").parentPort.postMessage(0);';
  const worker = new Worker(spin, { eval: true });
  await new Promise((resolve) => worker.once('message', resolve));
  await worker.terminate();
  const used = process.cpuUsage(process0);
  const processMs = (used.user + used.system) / 1000;
  const threadMs = threadCpuMs()! - mine;
  assert.ok(processMs >= 300, `the process used ${processMs} ms`);
  assert.ok(threadMs < processMs / 2, `this thread used ${threadMs} ms of the process's ${processMs} ms`);
});

test.run();
