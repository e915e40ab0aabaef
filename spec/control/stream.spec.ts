import { create } from '@bufbuild/protobuf';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import * as assert from 'uvu/assert';
import { createAgentStreamClient, type AgentMessageInit, type AgentStreamClient } from '../../src/agent/stream/agent-stream-client.js';
import { createAgentStreamServer, type AgentStreamServer, type AgentStreamServerOptions, type ControlMessageInit } from '../../src/control/stream/agent-stream-server.js';
import { LlmgwError } from '../../src/errors.js';
import { AgentService, ControlMessageSchema, type AgentMessage, type ControlMessage } from '../../src/messages/gen/llmgw/agent/v1/agent_pb.js';
import { PushQueue } from '../../src/net/push-queue.js';
import { createTestCa, type Pem, type TestCa } from '../support/test-ca.js';
import { suite } from '../support/uvu.js';
import { until } from '../support/until.js';

// The agent stream over real loopback HTTP/2 with real certificates: who may open it,
// and that messages flow both ways once it is open.

const register = (nodeId: string): AgentMessageInit => ({ body: { case: 'register', value: { nodeId, agentVersion: 'spec' } } });
const heartbeat = (unixMs: bigint): AgentMessageInit => ({ body: { case: 'heartbeat', value: { unixMs } } });

interface Seen {
  nodeIds: string[];
  received: AgentMessage[];
  sends: ((msg: ControlMessageInit) => void)[];
}

/** A server whose onStream records what arrives and keeps the stream open until the agent ends it. */
async function recordingServer(security: Pick<AgentStreamServerOptions, 'insecure' | 'tls'>): Promise<{ server: AgentStreamServer; seen: Seen }> {
  const seen: Seen = { nodeIds: [], received: [], sends: [] };
  const server = await createAgentStreamServer({
    ...(security as { tls: NonNullable<AgentStreamServerOptions['tls']> }),
    listen: '127.0.0.1:0',
    onStream: async (nodeId, incoming, send) => {
      seen.nodeIds.push(nodeId);
      seen.sends.push(send);
      for await (const m of incoming) seen.received.push(m);
    },
  });
  return { server, seen };
}

/** Opens a stream, sends `first`, and collects what comes back until it ends or fails. */
function openStream(client: AgentStreamClient, first: AgentMessageInit) {
  const out = new PushQueue<AgentMessageInit>();
  out.push(first);
  const got: ControlMessage[] = [];
  const ended = (async () => {
    for await (const m of client.open(out)) got.push(m);
  })().then(
    () => null,
    (err: unknown) => err,
  );
  return { out, got, ended };
}

let ca: TestCa;
let serverPem: Pem;
const clients: AgentStreamClient[] = [];
const servers: AgentStreamServer[] = [];
const track = <T extends AgentStreamClient | AgentStreamServer>(x: T, into: T[]): T => (into.push(x), x);

const test = suite('agent stream: mTLS over HTTP/2');

test.before(() => {
  ca = createTestCa();
  serverPem = ca.server();
});
test.after.each(async () => {
  for (const c of clients.splice(0)) c.close();
  await Promise.all(servers.splice(0).map((s) => s.close()));
});
test.after(() => ca.remove());

test('a certificate naming the node it registers is accepted, and messages flow both ways', async () => {
  const { server, seen } = await recordingServer({ tls: { ca: ca.ca, ...serverPem } });
  track(server, servers);
  assert.match(server.url, /^https:\/\/127\.0\.0\.1:\d+$/);
  const client = track(createAgentStreamClient({ url: server.url, tls: { ca: ca.ca, ...ca.client('node-a') } }), clients);
  const s = openStream(client, register('node-a'));

  await until(() => s.got.length >= 1, 'the Registered answer');
  assert.equal(s.got[0]!.body.case, 'registered');
  assert.equal(s.got[0]!.body.value, create(ControlMessageSchema, { body: { case: 'registered', value: { nodeId: 'node-a' } } }).body.value);
  assert.equal(seen.nodeIds, ['node-a']);

  s.out.push(heartbeat(42n));
  await until(() => seen.received.length === 2, 'the heartbeat at the server');
  assert.equal(seen.received.map((m) => m.body.case), ['register', 'heartbeat']);
  assert.equal(seen.received[1]!.body.case === 'heartbeat' && seen.received[1]!.body.value.unixMs, 42n);

  seen.sends[0]!({ body: { case: 'stopShard', value: { shardId: 'r1-0', graceSeconds: 30 } } });
  await until(() => s.got.length === 2, 'the StopShard at the agent');
  const stop = s.got[1]!.body;
  assert.ok(stop.case === 'stopShard' && stop.value.shardId === 'r1-0' && stop.value.graceSeconds === 30, `got ${stop.case}`);

  s.out.end();
  assert.is(await s.ended, null, 'the stream ends cleanly when the agent ends it');
});

test('a CN-only certificate is accepted for its CN', async () => {
  const { server, seen } = await recordingServer({ tls: { ca: ca.ca, ...serverPem } });
  track(server, servers);
  const client = track(createAgentStreamClient({ url: server.url, tls: { ca: ca.ca, ...ca.client('node-cn', { san: false }) } }), clients);
  const s = openStream(client, register('node-cn'));
  await until(() => s.got.length === 1, 'the Registered answer');
  assert.equal(seen.nodeIds, ['node-cn']);
  s.out.end();
  assert.is(await s.ended, null);
});

test('a certificate for another node is refused, and the server never sees the stream', async () => {
  const { server, seen } = await recordingServer({ tls: { ca: ca.ca, ...serverPem } });
  track(server, servers);
  const client = track(createAgentStreamClient({ url: server.url, tls: { ca: ca.ca, ...ca.client('node-b') } }), clients);
  const err = await openStream(client, register('node-a')).ended;
  assert.instance(err, LlmgwError);
  const e = err as LlmgwError;
  assert.is(e.code, 'LLMGW_STREAM_REFUSED');
  assert.equal(e.details, { connectCode: 'permission_denied' });
  assert.match(e.message, /node "node-a" cannot register with a certificate issued to node-b/);
  assert.equal(seen.nodeIds, []);
});

test('a connection without a client certificate is refused as unauthenticated', async () => {
  const { server, seen } = await recordingServer({ tls: { ca: ca.ca, ...serverPem } });
  track(server, servers);
  // The agent's client always presents one, so this dials with connect's own transport.
  const transport = createConnectTransport({ baseUrl: server.url, httpVersion: '2', nodeOptions: { ca: ca.ca } });
  const out = new PushQueue<AgentMessageInit>();
  out.push(register('node-a'));
  let caught: unknown = null;
  try {
    for await (const _ of createClient(AgentService, transport).connect(out)) assert.unreachable('no message may arrive');
  } catch (err) {
    caught = err;
  }
  assert.instance(caught, ConnectError);
  assert.is((caught as ConnectError).code, Code.Unauthenticated);
  assert.match((caught as ConnectError).rawMessage, /a client certificate is required/);
  assert.equal(seen.nodeIds, []);
});

test('a certificate from another CA is refused as untrusted, whatever node it names', async () => {
  const { server, seen } = await recordingServer({ tls: { ca: ca.ca, ...serverPem } });
  track(server, servers);
  const rogue = createTestCa('rogue-ca');
  try {
    const client = track(createAgentStreamClient({ url: server.url, tls: { ca: ca.ca, ...rogue.client('node-a') } }), clients);
    const err = (await openStream(client, register('node-a')).ended) as LlmgwError;
    assert.is(err.code, 'LLMGW_STREAM_REFUSED');
    assert.match(err.message, /client certificate is not trusted/);
    assert.equal(seen.nodeIds, []);
  } finally {
    rogue.remove();
  }
});

test('a stream whose first message is not a Register is refused', async () => {
  const { server, seen } = await recordingServer({ tls: { ca: ca.ca, ...serverPem } });
  track(server, servers);
  const client = track(createAgentStreamClient({ url: server.url, tls: { ca: ca.ca, ...ca.client('node-a') } }), clients);
  const err = (await openStream(client, heartbeat(1n)).ended) as LlmgwError;
  assert.is(err.code, 'LLMGW_STREAM_REFUSED');
  assert.match(err.message, /first message of the stream must be a Register, got heartbeat/);
  assert.equal(seen.nodeIds, []);
});

test('the server learns when the agent goes away, and a send after that fails loudly', async () => {
  let gone: AbortSignal | null = null;
  let send: ((msg: ControlMessageInit) => void) | null = null;
  let ended: unknown = 'running';
  const server = track(
    await createAgentStreamServer({
      tls: { ca: ca.ca, ...serverPem },
      listen: '127.0.0.1:0',
      onStream: async (_nodeId, incoming, s, signal) => {
        [send, gone] = [s, signal];
        try {
          for await (const _ of incoming);
          ended = null;
        } catch (err) {
          ended = err;
        }
      },
    }),
    servers,
  );
  const client = createAgentStreamClient({ url: server.url, tls: { ca: ca.ca, ...ca.client('node-a') } });
  const s = openStream(client, register('node-a'));
  await until(() => s.got.length === 1, 'the Registered answer');
  client.close(); // the node drops off the network
  await until(() => ended !== 'running', 'the server side of the stream to end');
  assert.ok(gone!.aborted, 'the signal handed to onStream aborts');
  try {
    send!({ body: { case: 'stopShard', value: { shardId: 'x' } } });
    assert.unreachable('a send on a gone stream was accepted');
  } catch (err) {
    assert.is((err as LlmgwError).code, 'LLMGW_STREAM_CLOSED');
  }
  assert.instance(await s.ended, LlmgwError);
});

test('closing the server ends its open streams with a reason the agent sees, without waiting for the agents', async () => {
  const { server } = await recordingServer({ tls: { ca: ca.ca, ...serverPem } });
  const client = track(createAgentStreamClient({ url: server.url, tls: { ca: ca.ca, ...ca.client('node-a') } }), clients);
  const s = openStream(client, register('node-a'));
  await until(() => s.got.length === 1, 'the Registered answer');
  await server.close();
  const err = (await s.ended) as LlmgwError;
  assert.is(err.code, 'LLMGW_STREAM_CLOSED');
  assert.match(err.message, /the control plane is shutting down/);
});

test('a stream that sends no Register is refused after registerTimeoutMs', async () => {
  const opened: string[] = [];
  const server = track(
    await createAgentStreamServer({ tls: { ca: ca.ca, ...serverPem }, listen: '127.0.0.1:0', registerTimeoutMs: 50, onStream: (nodeId) => void opened.push(nodeId) }),
    servers,
  );
  const client = track(createAgentStreamClient({ url: server.url, tls: { ca: ca.ca, ...ca.client('node-a') } }), clients);
  const silent = new PushQueue<AgentMessageInit>();
  let caught: unknown = null;
  try {
    for await (const _ of client.open(silent)) assert.unreachable('no message may arrive');
  } catch (err) {
    caught = err;
  }
  assert.is((caught as LlmgwError).code, 'LLMGW_STREAM_CLOSED');
  assert.equal((caught as LlmgwError).details, { connectCode: 'deadline_exceeded' });
  assert.match((caught as Error).message, /no Register within 50 ms/);
  assert.equal(opened, []);
});

test('plaintext works when both sides ask for it, with no identity check', async () => {
  const { server, seen } = await recordingServer({ insecure: true });
  track(server, servers);
  assert.match(server.url, /^http:\/\//);
  const client = track(createAgentStreamClient({ url: server.url, insecure: true }), clients);
  const s = openStream(client, register('node-plain'));
  await until(() => s.got.length === 1, 'the Registered answer');
  assert.equal(seen.nodeIds, ['node-plain']);
  s.out.end();
  assert.is(await s.ended, null);
});

test('plaintext to a TLS server, and TLS to a plaintext server, both fail to open', async () => {
  const tls = await recordingServer({ tls: { ca: ca.ca, ...serverPem } });
  const plain = await recordingServer({ insecure: true });
  track(tls.server, servers);
  track(plain.server, servers);

  const toTls = track(createAgentStreamClient({ url: tls.server.url.replace('https:', 'http:'), insecure: true }), clients);
  const e1 = (await openStream(toTls, register('node-a')).ended) as LlmgwError;
  assert.is(e1.code, 'LLMGW_STREAM_CLOSED', String(e1));

  const toPlain = track(createAgentStreamClient({ url: plain.server.url.replace('http:', 'https:'), tls: { ca: ca.ca, ...ca.client('node-a') } }), clients);
  const e2 = (await openStream(toPlain, register('node-a')).ended) as LlmgwError;
  assert.is(e2.code, 'LLMGW_STREAM_CLOSED', String(e2));
  assert.equal([...tls.seen.nodeIds, ...plain.seen.nodeIds], []);
});

test('neither side falls back to plaintext: it must be asked for, and the URL must agree', async () => {
  const refused = (fn: () => unknown, why: RegExp): void => {
    try {
      fn();
    } catch (err) {
      assert.is((err as LlmgwError).code, 'LLMGW_CONFIG_INVALID');
      assert.match((err as Error).message, why);
      return;
    }
    assert.unreachable(`accepted; expected ${why}`);
  };
  // The types already demand one of the two; this is what a config that names neither gets.
  const err = await createAgentStreamServer({ listen: '127.0.0.1:0', onStream: () => {} } as unknown as AgentStreamServerOptions).then(
    (s) => (servers.push(s), null),
    (e: unknown) => e,
  );
  assert.is((err as LlmgwError).code, 'LLMGW_CONFIG_INVALID');
  assert.match((err as Error).message, /tls \(ca, cert, key\) is required; set insecure: true/);
  refused(() => createAgentStreamClient({ url: 'https://127.0.0.1:1', insecure: true }), /insecure is set but https:\/\/127\.0\.0\.1:1\/ is not http:\/\//);
  refused(() => createAgentStreamClient({ url: 'http://127.0.0.1:1', tls: { ca: ca.ca, ...ca.client('node-a') } }), /is not https:\/\/; an http:\/\/ URL needs insecure: true/);
  refused(() => createAgentStreamClient({ url: 'https://127.0.0.1:1' } as never), /tls \(ca, cert, key\) is required/);
  refused(() => createAgentStreamClient({ url: 'control:4002', insecure: true }), /is not http:\/\//);
});

test.run();
