// A client that closes its connection is gone at once: node:http ends the connection then,
// but emits the response's 'close' only once the socket has closed, a loop turn or more
// later. A request released from the admission queue, or done hashing its prompt, in
// between must not be sent to an engine: its answer would reach nobody, and the engine
// would hold a batch slot and prefill it until the cancel came.

import type { IncomingMessage } from 'node:http';
import { connect, type Socket } from 'node:net';
import * as assert from 'uvu/assert';
import type { UsageRecord } from '../../src/messages/accounting.js';
import { hashPrefix } from '../../src/tasks/prefix-hash.js';
import { until } from '../support/until.js';
import { suite } from '../support/uvu.js';
import { startInProcess, type InProcessPort } from './in-process.js';

const test = suite('a client that closes its connection: its request reaches no engine, even before node:http says so (in-process data port)');

let inProcess: InProcessPort;
/** Prompts the engine received. */
const received: string[] = [];
/** Prompt hashes the CPU pool was asked for, each held until the spec lets it finish. */
const hashing: (() => void)[] = [];

test.before(async () => {
  inProcess = await startInProcess(
    `models: [{ name: m }]
router:
  stale_after_ms: 600000
  admission: { priority_header: true }
endpoints: [{ id: engine, url: "http://127.0.0.1:9", models: [m], max_num_seqs: 2 }]
`,
    {
      engine: (_req, res, raw) => {
        received.push((JSON.parse(raw.toString('utf8')) as { prompt: string }).prompt);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ id: 'x', object: 'text_completion', model: 'm', choices: [{ index: 0, text: 'ok', finish_reason: 'length' }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }));
      },
    },
    { run: <R>(_task: string, data: unknown) => new Promise<R>((resolve) => hashing.push(() => resolve(hashPrefix(data as Parameters<typeof hashPrefix>[0]) as R))) },
  );
});

test.after(async () => {
  await inProcess.close();
});

/** Sends a completion request on a connection of its own; resolves with the client's socket and the router's side of it. */
async function send(id: string, prompt: string, band: string): Promise<{ client: Socket; server: Socket }> {
  const body = JSON.stringify({ model: 'm', prompt, max_tokens: 4 });
  const server = new Promise<Socket>((resolve) => {
    const onRequest = (req: IncomingMessage): void => {
      if (req.headers['x-request-id'] !== id) return;
      inProcess.port.server.off('request', onRequest);
      resolve(req.socket);
    };
    inProcess.port.server.on('request', onRequest);
  });
  const client = connect(Number(new URL(inProcess.url).port), '127.0.0.1');
  client.on('error', () => {}); // the router may reset it once it has gone
  client.write(`POST /v1/completions HTTP/1.1\r\nhost: llmgw\r\ncontent-type: application/json\r\nx-request-id: ${id}\r\nx-llmgw-priority: ${band}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  return { client, server: await server };
}

async function recordOf(id: string): Promise<UsageRecord> {
  await until(() => inProcess.records.some((r) => r.id === id), `the usage record of ${id}`);
  return inProcess.records.find((r) => r.id === id)!;
}

test('released from the queue after its connection ended, before node:http closed the response: it leaves the queue instead', async () => {
  const admission = inProcess.admissions!.get('m')!;
  // Both batch slots taken: bronze may not use the one reserved for the first band.
  inProcess.table.applyLoad('engine', Date.now(), { running: 2, waiting: 0, kvUsage: 0.1 }, null);
  const { client, server } = await send('queued', 'tell me more', 'bronze');
  await until(() => admission.queue.length === 1, 'the request queued');
  // The moment the connection ends, a scrape shows room and the queue is released, as the
  // admission tick would: the response's 'close' has not come yet.
  server.once('end', () => {
    inProcess.table.applyLoad('engine', Date.now(), { running: 0, waiting: 0, kvUsage: 0 }, null);
    admission.release(Date.now());
  });
  client.end(); // a FIN, as an aborting client's connection sends
  const r = await recordOf('queued');
  assert.equal([r.status, r.attempts, r.endpoint], [499, 0, null], 'no attempt on an engine');
  const bronze = admission.queue.stats().find((b) => b.band === 'bronze')!;
  assert.equal([bronze.queued, bronze.cancelled, bronze.admitted], [0, 1, 0], 'it left the queue, as cancelled, not admitted');
  assert.equal(received, []);
  client.destroy();
});

test('its prompt hashed after its connection ended, before node:http closed the response: it is not sent', async () => {
  const { client, server } = await send('hashed', 'a long prompt, hashed on the CPU pool. '.repeat(1_000), 'silver');
  await until(() => hashing.length === 1, 'the prompt hashing');
  server.once('end', () => hashing[0]!());
  client.end();
  const r = await recordOf('hashed');
  assert.equal([r.status, r.attempts, r.endpoint], [499, 0, null], 'no attempt on an engine');
  assert.equal(received, []);
  client.destroy();
});

test.run();
