import * as assert from 'uvu/assert';
import { agentSession } from '../../../src/agent/stream/agent-session.js';
import { createAgentStreamClient } from '../../../src/agent/stream/agent-stream-client.js';
import { reconnectForever, type RetryInfo } from '../../../src/agent/stream/reconnect.js';
import { createAgentStreamServer, type AgentStreamServer } from '../../../src/control/stream/agent-stream-server.js';
import { LlmgwError } from '../../../src/errors.js';
import type { ControlMessage } from '../../../src/messages/gen/llmgw/agent/v1/agent_pb.js';
import { createTestCa } from '../../support/test-ca.js';
import { until } from '../../support/until.js';
import { suite } from '../../support/uvu.js';

// An agent keeps its stream up across control-plane restarts: it retries while the
// control plane is away, registers again when it is back, and starts its backoff over
// once a stream was accepted.

const test = suite('agent stream: reconnecting forever');

test('an agent re-registers after the control plane restarts, backing off while it is away', async () => {
  const ca = createTestCa();
  const serverPem = ca.server();
  const registrations: string[] = [];
  const start = (listen: string): Promise<AgentStreamServer> =>
    createAgentStreamServer({
      tls: { ca: ca.ca, ...serverPem },
      listen,
      onStream: async (nodeId, incoming, send) => {
        registrations.push(nodeId);
        send({ body: { case: 'stopShard', value: { shardId: `s${registrations.length}`, graceSeconds: 1 } } });
        for await (const _ of incoming);
      },
    });

  let server = await start('127.0.0.1:0');
  const port = server.port;
  const client = createAgentStreamClient({ url: server.url, tls: { ca: ca.ca, ...ca.client('node-a') } });
  const retries: RetryInfo[] = [];
  const down: ControlMessage[] = [];
  const stop = new AbortController();
  const running = reconnectForever({
    session: agentSession({ client, register: () => ({ body: { case: 'register', value: { nodeId: 'node-a' } } }), onMessage: (m) => down.push(m) }),
    signal: stop.signal,
    policy: { baseMs: 20, maxMs: 80 },
    onRetry: (r) => retries.push(r),
  });
  try {
    await until(() => down.length === 1, 'the first stream');
    assert.equal(registrations, ['node-a']);

    await server.close();
    // Away: every dial fails, and the attempts count up while the waits stay capped.
    await until(() => retries.length >= 4, 'four retries while the control plane is away');
    assert.equal(retries.slice(0, 4).map((r) => r.attempt), [0, 1, 2, 3]);
    assert.ok(retries.every((r) => r.delayMs < 80), `waits ${retries.map((r) => r.delayMs).join(', ')}`);
    assert.ok(retries.slice(1).every((r) => r.error instanceof LlmgwError && r.error.code === 'LLMGW_STREAM_CLOSED'), 'a refused dial is a closed stream');

    server = await start(`127.0.0.1:${port}`);
    await until(() => down.length === 2, 'the stream after the restart');
    assert.equal(registrations, ['node-a', 'node-a']);
    assert.equal(down.map((m) => m.body.case === 'stopShard' && m.body.value.shardId), ['s1', 's2']);

    const before = retries.length;
    await server.close();
    await until(() => retries.length > before, 'a retry after the second stream ended');
    assert.is(retries[before]!.attempt, 0, 'an accepted stream starts the backoff over');
  } finally {
    stop.abort();
    await running;
    client.close();
    await server.close();
    ca.remove();
  }
});

test('a stream the control plane never accepts keeps backing off', async () => {
  const ca = createTestCa();
  const server = await createAgentStreamServer({ tls: { ca: ca.ca, ...ca.server() }, listen: '127.0.0.1:0', onStream: () => {} });
  const client = createAgentStreamClient({ url: server.url, tls: { ca: ca.ca, ...ca.client('node-b') } });
  const retries: RetryInfo[] = [];
  const stop = new AbortController();
  const running = reconnectForever({
    session: agentSession({ client, register: () => ({ body: { case: 'register', value: { nodeId: 'node-a' } } }), onMessage: () => {} }),
    signal: stop.signal,
    policy: { baseMs: 5, maxMs: 40 },
    onRetry: (r) => retries.push(r),
  });
  try {
    await until(() => retries.length >= 3, 'three refused streams');
    assert.equal(retries.slice(0, 3).map((r) => r.attempt), [0, 1, 2]);
    assert.ok(retries.every((r) => r.error instanceof LlmgwError && r.error.code === 'LLMGW_STREAM_REFUSED'));
  } finally {
    stop.abort();
    await running;
    client.close();
    await server.close();
    ca.remove();
  }
});


test('after an accepted stream is lost, waits stay short for the fast window, then grow to the cap again', async () => {
  const waits: { delayMs: number; at: number }[] = [];
  const stop = new AbortController();
  let sessions = 0;
  const t0 = Date.now();
  await reconnectForever({
    // The first session is accepted, then every dial fails.
    session: async (accepted) => {
      sessions++;
      if (sessions === 1) accepted();
      throw new Error('down');
    },
    signal: stop.signal,
    policy: { baseMs: 5, maxMs: 200, fast: { withinMs: 150, maxMs: 10 } },
    random: () => 0.999,
    onRetry: (r) => {
      waits.push({ delayMs: r.delayMs, at: Date.now() - t0 });
      if (waits.filter((w) => w.delayMs > 10).length >= 2) stop.abort();
    },
  });
  const inWindow = waits.filter((w) => w.at < 140);
  assert.ok(inWindow.length >= 4, `quick retries inside the window: ${JSON.stringify(waits)}`);
  assert.ok(inWindow.every((w) => w.delayMs < 10), `capped inside the window: ${JSON.stringify(waits)}`);
  assert.is(waits.at(-1)!.delayMs, 199, 'past it, growing to the cap again');
});

test.run();
