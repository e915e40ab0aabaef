// The agent joins the fleet, end to end: a real `llmgw run --role=agent` process dials a
// real agent-stream server started here as the control plane's end, over loopback HTTP/2,
// and runs the sim behind the vLLM adapter (llmgw-vllm-sim) as its engine.
import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as assert from 'uvu/assert';
import { request } from 'undici';
import { groupAlive } from '../../../src/agent/supervisor/index.js';
import { createAgentStreamServer, type AgentStreamServer, type AgentStreamServerOptions, type ControlMessageInit } from '../../../src/control/stream/agent-stream-server.js';
import type { ShardStatus } from '../../../src/messages/agent.js';
import { ShardState, type AgentMessage, type Register, type ShardOutput, type ShardStatus as WireShardStatus } from '../../../src/messages/gen/llmgw/agent/v1/agent_pb.js';
import { shardSpecToWire } from '../../../src/messages/shard-spec-wire.js';
import { startProcess, type Started } from '../../support/process.js';
import { createTestCa, type TestCa } from '../../support/test-ca.js';
import { until } from '../../support/until.js';
import { suite } from '../../support/uvu.js';
import { engineSpec, freePort, reaped, tempDir, trackGroup } from '../supervisor/helpers.js';

/** The built executable, as an operator would set engines.vllm to it. */
const VLLM_SIM = fileURLToPath(new URL('../../../src/sim/vllm-cli.js', import.meta.url));
const HARDWARE = fileURLToPath(new URL('../../../../spec/fixtures/hardware/h100-8x/', import.meta.url));

/** One stream as the control plane's end saw it. */
interface Stream {
  readonly nodeId: string;
  readonly received: AgentMessage[];
  readonly send: (msg: ControlMessageInit) => void;
  ended: boolean;
}

/** The control plane's end: records every stream and keeps it open until the agent ends it. */
async function controlPlane(security: Pick<AgentStreamServerOptions, 'insecure' | 'tls'>, listen = '127.0.0.1:0'): Promise<{ server: AgentStreamServer; streams: Stream[] }> {
  const streams: Stream[] = [];
  const server = await createAgentStreamServer({
    ...(security as { tls: NonNullable<AgentStreamServerOptions['tls']> }),
    listen,
    onStream: async (nodeId, incoming, send) => {
      const s: Stream = { nodeId, received: [], send, ended: false };
      streams.push(s);
      try {
        for await (const m of incoming) s.received.push(m);
      } finally {
        s.ended = true;
      }
    },
  });
  return { server, streams };
}

function registerOf(s: Stream | undefined): Register | undefined {
  const first = s?.received[0]?.body;
  return first?.case === 'register' ? first.value : undefined;
}

/** Every status of `shardId` on the stream: its entry in the Register, then each ShardStatus. */
function statuses(s: Stream, shardId: string): WireShardStatus[] {
  return [...(registerOf(s)?.running.filter((r) => r.shardId === shardId) ?? []), ...s.received.flatMap((m) => (m.body.case === 'shardStatus' && m.body.value.shardId === shardId ? [m.body.value] : []))];
}

async function statusOn(s: Stream, shardId: string, state: ShardState, what: string, timeoutMs = 15_000): Promise<WireShardStatus> {
  await until(() => statuses(s, shardId).some((x) => x.state === state), what, timeoutMs);
  return statuses(s, shardId).find((x) => x.state === state)!;
}

function agentYaml(dir: string, lines: string[]): string {
  const stateDir = join(dir, 'state');
  const path = join(dir, 'agent.yaml');
  writeFileSync(
    path,
    [
      'listen: "127.0.0.1:0"',
      `state_dir: ${JSON.stringify(stateDir)}`,
      `nvidia_smi: ${JSON.stringify(join(HARDWARE, 'nvidia-smi'))}`,
      `ib_root: ${JSON.stringify(join(HARDWARE, 'sys'))}`,
      'fabrics: { ib-a: [mlx5_0, mlx5_1, mlx5_2, mlx5_3] }',
      'mgmt_addr: 127.0.0.1',
      'heartbeat_interval_ms: 100',
      'stop_timeout_ms: 2000',
      'drain_grace_ms: 2000',
      'health_interval_ms: 25',
      'watch_interval_ms: 25',
      'ready_timeout_ms: 10000',
      `engines: { vllm: ${JSON.stringify(VLLM_SIM)} }`,
      ...lines,
    ].join('\n') + '\n',
  );
  return path;
}

// Warnings on: the specs read the plaintext and reconnect warnings.
const startAgent = (config: string): Promise<Started> =>
  startProcess(['run', '--role=agent', '--config', config], { waitFor: /^llmgw agent listening on (\S+)$/, env: { LLMGW_SIM_LOAD_MS: '150', LLMGW_SIM_SPEED: '50', LLMGW_LOG_LEVEL: 'warn' } });

async function shardsOf(agent: Started): Promise<ShardStatus[]> {
  return (await (await request(`${agent.match[1]}/agent/v1/shards`)).body.json()) as ShardStatus[];
}

interface Ctx {
  dir: string;
  config: string;
  cp: { server: AgentStreamServer; streams: Stream[] };
  agent: Started | undefined;
  port: number;
  pgid: number;
  groups: number[];
}

const test = suite<Ctx>('agent: the fleet link over a real stream');

test.before(async (ctx) => {
  // tsc writes no mode bits; npm run build sets this one, a bare tsc build does not.
  chmodSync(VLLM_SIM, 0o755);
  ctx.dir = tempDir('llmgw-fleet-link-');
  ctx.groups = [];
  ctx.cp = await controlPlane({ insecure: true });
  ctx.config = agentYaml(ctx.dir, ['node_id: node-a', `server: ${ctx.cp.server.url}`, 'insecure: true']);
});

test.after(async (ctx) => {
  await ctx.agent?.stop();
  await ctx.cp.server.close();
  await reaped(ctx.groups);
  rmSync(ctx.dir, { recursive: true, force: true });
});

test("the agent registers with the fixture's GPUs and adapters, then heartbeats", async (ctx) => {
  ctx.agent = await startAgent(ctx.config);
  await until(() => registerOf(ctx.cp.streams[0]) !== undefined, 'the Register');
  const reg = registerOf(ctx.cp.streams[0])!;
  assert.is(ctx.cp.streams[0]!.nodeId, 'node-a');
  assert.is(reg.mgmtIp, '127.0.0.1');
  assert.match(reg.agentVersion, /^\d+\.\d+\.\d+/);
  assert.equal(reg.inventory!.gpus.map((g) => g.gpuClass), Array(8).fill('h100-80g'));
  assert.equal(reg.inventory!.fabrics.map((f) => [f.name, f.hcas.length]), [['ib-a', 4]]);
  assert.equal(reg.running, []);
  await until(() => /stream to the control plane is plaintext/.test(ctx.agent!.stderr()), 'the warning that the stream is plaintext', 5_000);
  await until(() => ctx.cp.streams[0]!.received.some((m) => m.body.case === 'heartbeat'), 'a heartbeat', 5_000);
});

test('StartShard launches the sim as vllm on the management address; READY arrives and the engine answers /v1/models', async (ctx) => {
  const s = ctx.cp.streams[0]!;
  ctx.port = await freePort();
  // No http_host: the agent binds the engine to its mgmt_addr.
  const { httpHost: _, ...spec } = engineSpec(ctx.port);
  s.send({ body: { case: 'startShard', value: { shardId: 'llama-r0', spec: shardSpecToWire(spec) } } });
  const ready = await statusOn(s, 'llama-r0', ShardState.READY, 'READY for llama-r0');
  assert.is(ready.spec?.servedName, 'llama-3.1-8b', 'a status carries the spec, not only the transition');
  assert.is(ready.spec?.httpHost, '127.0.0.1');
  assert.ok(statuses(s, 'llama-r0').some((x) => x.state === ShardState.LOADING), 'the transitions before it are reported too');
  const models = (await (await request(`http://127.0.0.1:${ctx.port}/v1/models`)).body.json()) as { data: { id: string }[] };
  assert.equal(models.data.map((m) => m.id), ['llama-3.1-8b']);
  const [listed] = await shardsOf(ctx.agent!);
  ctx.pgid = listed!.processes[0]!.pgid;
  ctx.groups.push(ctx.pgid);
  trackGroup(ctx.pgid);

  // A spec the supervisor refuses comes back FAILED with the refusal as the reason.
  s.send({ body: { case: 'startShard', value: { shardId: 'bad', spec: shardSpecToWire({ ...engineSpec(1), gpus: [] }) } } });
  const failed = await statusOn(s, 'bad', ShardState.FAILED, 'FAILED for the refused spec', 5_000);
  assert.match(failed.reason ?? '', /shard bad cannot be launched/);
});

test("RequestShardOutput answers with the engine's last lines; an unknown shard with an error", async (ctx) => {
  const s = ctx.cp.streams[0]!;
  const output = (id: string): ShardOutput | undefined =>
    s.received.flatMap((m) => (m.body.case === 'shardOutput' && m.body.value.requestId === id ? [m.body.value] : []))[0];
  s.send({ body: { case: 'requestShardOutput', value: { requestId: 'q1', shardId: 'llama-r0', lines: 2 } } });
  s.send({ body: { case: 'requestShardOutput', value: { requestId: 'q2', shardId: 'ghost', lines: 2 } } });
  await until(() => output('q1') !== undefined && output('q2') !== undefined, 'both ShardOutputs', 5_000);
  assert.is(output('q1')!.lines.length, 2);
  assert.match(output('q1')!.lines[1]!, /Starting vLLM API server on http:\/\/127\.0\.0\.1:/);
  assert.is(output('q1')!.error, '');
  assert.is(output('q2')!.error, "no shard 'ghost' on this node");

  // Stopping a shard the node does not have answers STOPPED, so the control plane lets go.
  s.send({ body: { case: 'stopShard', value: { shardId: 'ghost', graceSeconds: 1 } } });
  await statusOn(s, 'ghost', ShardState.STOPPED, 'STOPPED for an unknown shard', 5_000);
});

test('the control plane going away really cuts the stream; the agent reconnects and registers its running shard again', async (ctx) => {
  const port = ctx.cp.server.port;
  await ctx.cp.server.close();
  await until(() => ctx.cp.streams[0]!.ended, 'the first stream to end at the server');
  const before = ctx.cp.streams;
  ctx.cp = await controlPlane({ insecure: true }, `127.0.0.1:${port}`);
  await until(() => registerOf(ctx.cp.streams[0]) !== undefined, 'a Register on the new server', 10_000);
  assert.is(before.length, 1, 'one stream opened to the first server');
  const running = registerOf(ctx.cp.streams[0])!.running;
  // The refused shard never existed here, so it is not among them.
  assert.equal(running.map((r) => [r.shardId, r.state]), [['llama-r0', ShardState.READY]]);
  await until(() => /reconnecting/.test(ctx.agent!.stderr()), 'the agent to log its reconnect', 5_000);
});

test('a restarted agent re-registers with the engine it adopted', async (ctx) => {
  await ctx.agent!.stop();
  await until(() => ctx.cp.streams[0]!.ended, 'the stream to end with the agent');
  assert.ok(groupAlive(ctx.pgid), 'the engine outlives its agent');
  ctx.agent = await startAgent(ctx.config);
  await until(() => registerOf(ctx.cp.streams[1]) !== undefined, 'the Register of the new agent');
  const llama = registerOf(ctx.cp.streams[1])!.running.find((r) => r.shardId === 'llama-r0');
  assert.ok(llama?.adopted, 'adopted, not started again');
  assert.is(llama.spec?.servedName, 'llama-3.1-8b');
  assert.is((await shardsOf(ctx.agent)).find((x) => x.id === 'llama-r0')!.processes[0]!.pgid, ctx.pgid, 'the same engine');
});

test('StopShard stops the engine: STOPPED arrives and its process group is gone', async (ctx) => {
  const s = ctx.cp.streams[1]!;
  await statusOn(s, 'llama-r0', ShardState.READY, 'the adopted shard READY after its health check');
  s.send({ body: { case: 'stopShard', value: { shardId: 'llama-r0', graceSeconds: 5 } } });
  await statusOn(s, 'llama-r0', ShardState.STOPPED, 'STOPPED for llama-r0');
  assert.not.ok(groupAlive(ctx.pgid), 'the engine is gone');
  assert.ok(statuses(s, 'llama-r0').some((x) => x.state === ShardState.DRAINING), 'drained before it was signalled');
});

test.run();

const tls = suite<{ ca: TestCa; dir: string; agent: Started | undefined; cp: { server: AgentStreamServer; streams: Stream[] } }>('agent: the fleet link over mTLS');

tls.before(async (ctx) => {
  ctx.ca = createTestCa();
  ctx.dir = tempDir('llmgw-fleet-link-tls-');
  ctx.cp = await controlPlane({ tls: { ca: ctx.ca.ca, ...ctx.ca.server() } });
});

tls.after(async (ctx) => {
  await ctx.agent?.stop();
  await ctx.cp.server.close();
  ctx.ca.remove();
  rmSync(ctx.dir, { recursive: true, force: true });
});

tls('an agent with a certificate naming its node registers over mTLS', async (ctx) => {
  const pem = ctx.ca.client('node-tls');
  const file = (name: string, text: string): string => {
    const path = join(ctx.dir, name);
    writeFileSync(path, text);
    return path;
  };
  mkdirSync(join(ctx.dir, 'state'), { recursive: true });
  const config = agentYaml(ctx.dir, [
    'node_id: node-tls',
    `server: ${ctx.cp.server.url}`,
    `tls: { ca: ${file('ca.pem', ctx.ca.ca)}, cert: ${file('node.pem', pem.cert)}, key: ${file('node.key', pem.key)} }`,
  ]);
  ctx.agent = await startAgent(config);
  await until(() => registerOf(ctx.cp.streams[0]) !== undefined, 'the Register over mTLS');
  assert.is(ctx.cp.streams[0]!.nodeId, 'node-tls');
  assert.is(registerOf(ctx.cp.streams[0])!.inventory!.gpus.length, 8);
  assert.not.match(ctx.agent.stderr(), /plaintext/);
});

tls.run();
