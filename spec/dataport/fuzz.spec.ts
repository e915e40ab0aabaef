// Garbage stops at the gateway. A real llmgw server in front of a sim engine that
// crashes on bad input (`--fragile`) takes 10,000 generated bodies — wrong types and
// ranges per field, deep nesting, prototype keys, truncated JSON, invalid UTF-8, odd
// content types, duplicated keys — and raw-socket abuse of HTTP itself. No answer may
// be a 5xx, every error must be in the OpenAI shape, the engine must survive, and the
// port must serve valid requests afterwards.

import { connect } from 'node:net';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import { Agent, request } from 'undici';
import { startProcess, startServer, writeConfig, type Started } from '../support/process.js';
import { until } from '../support/until.js';
import { suite } from '../support/uvu.js';
import { fuzzCase, rng, type FuzzCase } from './fuzz-bodies.js';

const test = suite('data port fuzz: malformed requests stop at the gateway (real server, fragile engine)');

const BODIES = 10_000;
const CONCURRENCY = 32;
const SEED = Number(process.env.LLMGW_FUZZ_SEED ?? 20_261_201);
const MAX_MODEL_LEN = 4096;

let sim: Started;
let server: Started;
let url: string;
let host: string;
let port: number;
// Idle sockets are let go after 1 s, far inside the server's 5 s keep-alive, so that a
// loaded machine's late timers cannot reuse one the server is closing (a reset that
// would read as the gateway failing a request).
const agent = new Agent({ connections: CONCURRENCY, pipelining: 1, keepAliveTimeout: 1_000 });

test.before(async () => {
  sim = await startProcess(['run', '--role=sim', '--listen', '127.0.0.1:0', '--model', 'm', '--speed', '1000', '--seed', '1', '--max-model-len', String(MAX_MODEL_LEN), '--fragile'], {
    waitFor: /listening on (http:\S+)/,
  });
  const config = writeConfig(
    `listen: "127.0.0.1:0"
admin_listen: "127.0.0.1:0"
log_level: error
router:
  poll_interval_ms: 100
  max_body_bytes: 1048576
  admission: { enabled: false }
models:
  - name: m
endpoints:
  - { id: fragile, url: "${sim.match[1]!}", models: [m] }
`,
  );
  server = await startServer(config);
  url = server.match[1]!;
  const parsed = new URL(url);
  host = parsed.hostname;
  port = Number(parsed.port);
  await waitReady();
});

test.after(async () => {
  await agent.close();
  await Promise.all([server?.stop(), sim?.stop()]);
});

/** The engine is listed as ready, so max_tokens is checked against its context. */
async function waitReady(): Promise<void> {
  const probe = Buffer.from(JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }], max_tokens: MAX_MODEL_LEN }));
  await until(async () => (await post('/v1/chat/completions', 'application/json', probe)).text.includes('context_length_exceeded'), 'the engine listed as ready with its max_model_len');
}

async function post(path: string, contentType: string | null, body: Buffer): Promise<{ status: number; text: string }> {
  const res = await request(`${url}${path}`, { method: 'POST', dispatcher: agent, body, headers: contentType === null ? {} : { 'content-type': contentType } });
  return { status: res.statusCode, text: await res.body.text() };
}

/** What is wrong with an error answer's shape, or null when it is `{"error":{"message","type","param","code"}}`. */
function shapeFault(text: string): string | null {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return `not JSON: ${text.slice(0, 120)}`;
  }
  const e = (json as { error?: Record<string, unknown> }).error;
  if (typeof e !== 'object' || e === null) return `no error object: ${text.slice(0, 120)}`;
  if (typeof e['message'] !== 'string' || typeof e['type'] !== 'string') return `message and type must be strings: ${text.slice(0, 120)}`;
  if (!('param' in e) || !(e['param'] === null || typeof e['param'] === 'string')) return `param must be a string or null: ${text.slice(0, 120)}`;
  if (!('code' in e)) return `no code: ${text.slice(0, 120)}`;
  return null;
}

const engineAlive = (): boolean => sim.child.exitCode === null && sim.child.signalCode === null;

test(`${BODIES} generated bodies: no 5xx, every error OpenAI-shaped, the engine alive`, async () => {
  const r = rng(SEED);
  const cases: FuzzCase[] = Array.from({ length: BODIES }, () => fuzzCase(r));
  const failures: string[] = [];
  const statuses = new Map<number, number>();
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < cases.length && failures.length < 20) {
      const c = cases[next++]!;
      const res = await post(c.path, c.contentType, c.body).catch((err: Error) => ({ status: 0, text: err.message }));
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      if (res.status === 0 || res.status >= 500) failures.push(`${res.status} for ${c.what}: ${res.text.slice(0, 300)}`);
      else if (res.status >= 400) {
        const fault = shapeFault(res.text);
        if (fault) failures.push(`${res.status} for ${c.what}: ${fault}`);
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const summary = [...statuses].sort((a, b) => a[0] - b[0]).map(([s, n]) => `${s}: ${n}`).join(', ');
  assert.equal(failures, [], `seed ${SEED}; statuses ${summary}`);
  assert.ok(engineAlive(), `the engine died: ${sim.stderr().slice(-500)}`);
  // The mix reached both sides: many refused at the gateway, many served by the engine.
  assert.ok((statuses.get(400) ?? 0) > BODIES / 4, summary);
  assert.ok((statuses.get(200) ?? 0) > BODIES / 20, summary);
});

/** Writes `chunks` to a raw connection (pausing `gapMs` between them), then reads until the server closes or `waitMs` passes. */
function raw(chunks: (string | Buffer)[], opts: { gapMs?: number; waitMs?: number; hangUp?: boolean } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, host);
    let got = '';
    const timer = setTimeout(() => socket.destroy(), opts.waitMs ?? 3_000);
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => (got += d));
    socket.on('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNRESET' || err.code === 'EPIPE' ? undefined : reject(err)));
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(got);
    });
    socket.on('connect', async () => {
      for (const c of chunks) {
        if (socket.destroyed) return;
        socket.write(c);
        if (opts.gapMs) await new Promise((r) => setTimeout(r, opts.gapMs));
      }
      if (opts.hangUp) socket.destroy();
    });
  });
}

/** The status of every response in a raw reply, however each is framed. */
const statusLines = (reply: string): number[] => [...reply.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));

/** Every response in a raw reply of content-length framed answers: status and body. */
function responses(reply: string): { status: number; body: string }[] {
  const out: { status: number; body: string }[] = [];
  let rest = reply;
  while (rest.startsWith('HTTP/1.1 ')) {
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0) break;
    const head = rest.slice(0, end);
    const len = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? 0);
    out.push({ status: Number(head.slice(9, 12)), body: rest.slice(end + 4, end + 4 + len) });
    rest = rest.slice(end + 4 + len);
  }
  return out;
}

const VALID = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }], max_tokens: 1 });
const requestText = (body: string, extra = ''): string =>
  `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${extra}\r\n${body}`;

test('raw-socket abuse gets OpenAI-shaped 4xx or a closed connection, never a 5xx', async () => {
  const refused = async (what: string, chunks: (string | Buffer)[], status: number): Promise<void> => {
    const rs = responses(await raw(chunks));
    assert.ok(rs.length >= 1, `${what}: no answer`);
    const last = rs[rs.length - 1]!;
    assert.is(last.status, status, `${what}: ${last.body}`);
    assert.is(shapeFault(last.body), null, what);
  };
  await refused('garbage request line', ['HELLO WORLD\r\n\r\n'], 400);
  await refused('binary noise', [Buffer.from([0, 1, 2, 0xff, 0xfe, 13, 10, 13, 10])], 400);
  // Just past node's 16 KiB limit, so that the server has read it all when it answers
  // and closes (unread bytes would turn its close into a reset that can eat the 431).
  await refused('oversized headers', [`GET /v1/models HTTP/1.1\r\nhost: x\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`], 431);
  await refused('chunked garbage', ['POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\nZZZ\r\nnot a chunk\r\n\r\n'], 400);
  await refused('content-length and chunked both', [`POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: 3\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n`], 400);
  await refused('a header with a bad character', ['GET /v1/models HTTP/1.1\r\nhost: x\r\nx-bad: a\u0000b\r\n\r\n'], 400);
  await refused('content-length shorter than the body', [requestText(VALID).replace(/content-length: \d+/, 'content-length: 10')], 400);

  // A content-length longer than what is sent, then a hang-up; a body cut off mid-way.
  assert.is(await raw([requestText(VALID).replace(/content-length: \d+/, 'content-length: 5000')], { waitMs: 300, hangUp: false }), '');
  assert.is(await raw([requestText(VALID).slice(0, -10)], { hangUp: true }), '');

  // Pipelined requests are answered in order on one connection.
  const pipelined = await raw([requestText(VALID) + requestText('{"model":') + requestText(VALID, 'connection: close\r\n')]);
  assert.equal(statusLines(pipelined), [200, 400, 200]);

  // A request trickled a few bytes at a time still gets its answer (bounded: ~1 s).
  const text = requestText(VALID, 'connection: close\r\n');
  const pieces = Array.from({ length: Math.ceil(text.length / 8) }, (_, i) => text.slice(i * 8, i * 8 + 8));
  assert.equal(statusLines(await raw(pieces, { gapMs: 25, waitMs: 10_000 })), [200]);
  assert.ok(engineAlive(), 'the engine died');
});

test('afterwards the port serves valid requests, streamed and not, from the same engine', async () => {
  const body = { model: 'm', messages: [{ role: 'user', content: 'still there?' }], max_tokens: 3 };
  const plain = await post('/v1/chat/completions', 'application/json', Buffer.from(JSON.stringify(body)));
  assert.is(plain.status, 200, plain.text);
  assert.is((JSON.parse(plain.text) as { choices: unknown[] }).choices.length, 1);
  const streamed = await post('/v1/chat/completions', 'application/json', Buffer.from(JSON.stringify({ ...body, stream: true })));
  assert.is(streamed.status, 200, streamed.text);
  assert.match(streamed.text, /^data: \{/);
  assert.ok(streamed.text.trimEnd().endsWith('data: [DONE]'), streamed.text.slice(-200));
  assert.ok(engineAlive(), 'the engine died');
});

test.run();
