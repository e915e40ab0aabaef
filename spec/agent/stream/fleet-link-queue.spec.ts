// What the fleet link does with shard events it cannot send: none waits for a stream
// that is down, and a queue past its limit cuts the stream, because the next Register
// carries every shard anyway. The stream is real (loopback HTTP/2); the supervisor is a
// list in memory, as these cases are about the link's queue, not about engines.
import * as assert from 'uvu/assert';
import { createAgentStreamClient } from '../../../src/agent/stream/agent-stream-client.js';
import { FleetLink, type ShardPort } from '../../../src/agent/stream/fleet-link.js';
import { createAgentStreamServer, type AgentStreamServer } from '../../../src/control/stream/agent-stream-server.js';
import type { Logger } from '../../../src/log.js';
import type { ShardEvent, ShardStatus } from '../../../src/messages/agent.js';
import type { AgentMessage } from '../../../src/messages/gen/llmgw/agent/v1/agent_pb.js';
import { until } from '../../support/until.js';
import { suite } from '../../support/uvu.js';

const test = suite('agent: the fleet link queue');

const event = (id: string, n: number): ShardEvent => ({ id, replica: 'r', rank: 0, from: 'starting', state: 'loading', at: n, reason: null, tail: null });
const status = (id: string): ShardStatus => ({ id, spec: null, state: 'ready', since: 1, reason: null, tail: null, adopted: false, processes: [] });
const empty = { gpus: [], hcas: [], nvlinkDomains: [], fabrics: [], warnings: [] };

function recorder(): { warnings: string[]; log: Logger } {
  const warnings: string[] = [];
  const log: Logger = { debug: () => {}, info: () => {}, warn: (m) => void warnings.push(m), error: (m) => void warnings.push(m), enabled: () => true };
  return { warnings, log };
}

async function server(listen = '127.0.0.1:0'): Promise<{ server: AgentStreamServer; streams: AgentMessage[][] }> {
  const streams: AgentMessage[][] = [];
  const s = await createAgentStreamServer({
    insecure: true,
    listen,
    onStream: async (_id, incoming) => {
      const got: AgentMessage[] = [];
      streams.push(got);
      for await (const m of incoming) got.push(m);
    },
  });
  return { server: s, streams };
}

function port(list: () => Promise<ShardStatus[]>): ShardPort {
  const refuse = () => Promise.resolve({ ok: false as const, error: { name: 'LlmgwError', code: 'LLMGW_NOT_FOUND' as const, message: 'none' } });
  return { list, start: refuse, stop: refuse, output: refuse };
}

test('events while the stream is down are dropped, and the next Register carries the state instead', async () => {
  let cp = await server();
  const at = cp.server.port;
  const client = createAgentStreamClient({ url: cp.server.url, insecure: true });
  const { log } = recorder();
  const link = new FleetLink({ client, nodeId: 'n', hostname: 'h', mgmtAddr: '127.0.0.1', mgmtInterface: 'lo', agentVersion: '0', shards: port(async () => [status('s1')]), discover: async () => empty, heartbeatIntervalMs: 60_000, policy: { baseMs: 20, maxMs: 40 }, log });
  const stop = new AbortController();
  const running = link.run(stop.signal);
  try {
    await until(() => cp.streams.length === 1 && cp.streams[0]!.length === 1, 'the first Register');
    link.shardEvent(event('s1', 1));
    await until(() => cp.streams[0]!.length === 2, 'the event on the open stream');
    assert.is(cp.streams[0]![1]!.body.case, 'shardStatus');

    await cp.server.close();
    for (let i = 0; i < 5_000; i++) link.shardEvent(event('s1', i));
    cp = await server(`127.0.0.1:${at}`);
    await until(() => cp.streams.length === 1 && cp.streams[0]!.length >= 1, 'the Register after the restart');
    link.shardEvent(event('s1', 99_999));
    await until(() => cp.streams[0]!.length === 2, 'an event on the new stream');
    const [register, next] = cp.streams[0]!;
    assert.ok(register!.body.case === 'register' && register!.body.value.running.map((r) => r.shardId).join() === 's1');
    assert.ok(next!.body.case === 'shardStatus' && next!.body.value.sinceUnixMs === 99_999n, 'none of the 5,000 events from while it was down');
  } finally {
    stop.abort();
    await running;
    client.close();
    await cp.server.close();
  }
});

test('a queue past its limit cuts the stream, and the agent registers afresh', async () => {
  const cp = await server();
  const client = createAgentStreamClient({ url: cp.server.url, insecure: true });
  const { warnings, log } = recorder();
  // The first list hangs until released, so events pile up behind the Register being built.
  let release: () => void = () => {};
  const first = new Promise<void>((r) => (release = r));
  let lists = 0;
  const shards = port(async () => {
    if (lists++ === 0) await first;
    return [status('s1')];
  });
  const link = new FleetLink({ client, nodeId: 'n', hostname: 'h', mgmtAddr: '127.0.0.1', mgmtInterface: 'lo', agentVersion: '0', shards, discover: async () => empty, heartbeatIntervalMs: 60_000, queueLimit: 3, policy: { baseMs: 10, maxMs: 20 }, log });
  const stop = new AbortController();
  const running = link.run(stop.signal);
  try {
    await until(() => lists === 1, 'the first Register being built');
    for (let i = 0; i < 3; i++) link.shardEvent(event('s1', i));
    assert.equal(warnings, [], 'up to the limit, events wait');
    link.shardEvent(event('s1', 3));
    assert.equal(warnings, ['the control plane is not reading the stream; cutting it so that a new Register carries the state']);
    release();
    await until(() => cp.streams.length === 1 && cp.streams[0]!.length === 1, 'a Register on a fresh stream');
    assert.ok(lists >= 2, 'the state was read again for it');
    assert.equal(cp.streams[0]!.map((m) => m.body.case), ['register'], 'the events of the cut stream are not replayed');
  } finally {
    stop.abort();
    await running;
    client.close();
    await cp.server.close();
  }
});

test.run();
