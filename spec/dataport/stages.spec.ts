// The data port's stages, each pinned through a data port built in this process in
// front of a recording engine: what parse refuses, what resolve changes in the body the
// engine sees (and what it leaves byte for byte), that forward walks the fallbacks, and
// that account leaves exactly one usage record whatever the ending.

import { connect } from 'node:net';
import { request } from 'undici';
import * as assert from 'uvu/assert';
import type { DataPort } from '../../src/dataport/data-port.js';
import { LlmgwError } from '../../src/errors.js';
import type { UsageRecord } from '../../src/messages/accounting.js';
import { until } from '../support/until.js';
import { suite } from '../support/uvu.js';
import { startInProcess, type InProcessPort } from './in-process.js';

const test = suite('data port stages (in-process data port, recording engine)');

const USAGE = { prompt_tokens: 7, completion_tokens: 2, total_tokens: 9 };
/** The bytes of each body the engine received. */
const received: Buffer[] = [];
let inProcess: InProcessPort;
let port: DataPort;
let url: string;
let records: UsageRecord[];

function answer(body: Record<string, unknown>): string {
  if (body.stream !== true) return JSON.stringify({ id: 'x', object: 'chat.completion', model: body.model, choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: USAGE });
  const chunk = (delta: object, extra: object = {}): string => `data: ${JSON.stringify({ id: 'x', object: 'chat.completion.chunk', choices: [{ index: 0, delta }], ...extra })}\n\n`;
  const so = body.stream_options as { include_usage?: boolean } | undefined;
  return chunk({ role: 'assistant', content: '' }) + chunk({ content: 'o' }) + chunk({ content: 'k' }) + (so?.include_usage ? `data: ${JSON.stringify({ id: 'x', choices: [], usage: USAGE })}\n\n` : '') + 'data: [DONE]\n\n';
}

test.before(async () => {
  inProcess = await startInProcess(
    `models:
  - { name: m, aliases: [mm] }
  - { name: orphan, fallbacks: [m] }
  - { name: w, stream_from_engine: false }
router: { max_body_bytes: 4096, admission: { enabled: false } }
# 'orphan' gets no engine, so it falls back.
endpoints:
  - { id: engine, url: "http://127.0.0.1:9", models: [m, w] }
  - { id: never, url: "http://127.0.0.1:9", models: [orphan] }
`,
    {
      engine: (_req, res, raw) => {
        received.push(raw);
        const body = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
        // A request that says `hold` gets no answer: its client is the one to leave.
        if (JSON.stringify(body.messages).includes('hold')) return;
        // `fail-slowly` gets a 500 whose body never ends.
        if (JSON.stringify(body.messages).includes('fail-slowly')) {
          res.writeHead(500, { 'content-type': 'application/json' });
          return void res.write('{"error":');
        }
        res.writeHead(200, { 'content-type': body.stream === true ? 'text/event-stream' : 'application/json' });
        res.end(answer(body));
      },
    },
  );
  ({ port, url, records } = inProcess);
});

test.after(async () => {
  await inProcess.close();
});

async function post(body: string | Buffer, headers: Record<string, string> = {}): Promise<{ status: number; text: string; record: UsageRecord }> {
  const before = records.length;
  const res = await request(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  const text = await res.body.text();
  // The record is sent once the response has ended; give the stage's finally its turn.
  await new Promise(setImmediate);
  assert.is(records.length, before + 1, `exactly one usage record for ${String(body).slice(0, 60)}`);
  return { status: res.statusCode, text, record: records.at(-1)! };
}

const chat = (extra: Record<string, unknown> = {}): string => JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }], ...extra });

test('parse: each malformed body is refused with its param, and still leaves one record', async () => {
  const cases: [string | Buffer, number, string | null][] = [
    ['{"model":', 400, null],
    ['[1,2]', 400, null],
    ['null', 400, null],
    ['{"messages":[]}', 400, 'model'],
    [chat({ stream: 'yes' }), 400, 'stream'],
    [Buffer.alloc(5_000, 0x20), 413, null],
  ];
  for (const [body, status, param] of cases) {
    const r = await post(body);
    assert.is(r.status, status, String(body).slice(0, 40));
    const error = (JSON.parse(r.text) as { error: { param: string | null; type: string; code: string } }).error;
    assert.is(error.param, param, String(body).slice(0, 40));
    assert.is(r.record.status, status);
    assert.is(r.record.endpoint, null, 'no engine was tried');
  }
  assert.is(received.length, 0, 'nothing reached the engine');
});

test('resolve: an unknown model is a 404 naming what exists; an unknown profile is a 400', async () => {
  const unknown = await post(JSON.stringify({ model: 'nope', messages: [{ role: 'user', content: 'hi' }] }));
  assert.is(unknown.status, 404);
  assert.match(unknown.text, /available: m, orphan, w, mm/);
  const profile = await post(chat(), { 'x-llmgw-profile': 'fastest' });
  assert.is(profile.status, 400);
  assert.match(profile.text, /'fastest' is not a routing profile; have: /);
  assert.is(received.length, 0);
});

test('resolve: a body that needs no change reaches the engine byte for byte', async () => {
  const odd = '{ "model" : "m",\n  "messages": [{"role":"user","content":"hi"}], "top_k": 5, "stream": true, "stream_options": {"include_usage": true} }';
  const r = await post(odd);
  assert.is(r.status, 200);
  assert.is(received.at(-1)!.toString('utf8'), odd);
  const whole = '{ "model" : "m",\n  "messages": [{"role":"user","content":"hi"}], "logprobs": true }';
  await post(whole);
  assert.is(received.at(-1)!.toString('utf8'), whole, 'an answer asked whole with options a stream would change is asked whole');
});

test('resolve: an answer the client wants whole is asked of the engine as a stream, and sent whole', async () => {
  const r = await post(chat({ max_tokens: 5 }));
  const sent = JSON.parse(received.at(-1)!.toString('utf8')) as Record<string, unknown>;
  assert.is(sent.stream, true);
  assert.equal(sent.stream_options, { include_usage: true });
  assert.is(r.status, 200);
  const body = JSON.parse(r.text) as { object: string; choices: { message: { role: string; content: string } }[]; usage: unknown };
  assert.is(body.object, 'chat.completion');
  assert.equal(body.choices[0]!.message, { role: 'assistant', content: 'ok', tool_calls: [] });
  assert.equal(body.usage, USAGE);
  assert.is(r.record.promptTokens, 7);
  assert.is(r.record.stream, false, 'the record says what the client asked for');
  const asked = JSON.stringify({ model: 'w', messages: [{ role: 'user', content: 'hi' }] });
  await post(asked);
  assert.is(received.at(-1)!.toString('utf8'), asked, 'a model with stream_from_engine: false has its answers asked for whole');
});

test('resolve: an alias is sent as the canonical name, and a stream always asks the engine for usage', async () => {
  const r = await post(JSON.stringify({ model: 'mm', messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { continuous: 1 } }));
  const sent = JSON.parse(received.at(-1)!.toString('utf8')) as { model: string; stream_options: Record<string, unknown> };
  assert.is(sent.model, 'm');
  assert.equal(sent.stream_options, { continuous: 1, include_usage: true }, "the client's other stream options are kept");
  assert.not.match(r.text, /"usage"/, 'the client did not ask for usage: it does not get it');
  assert.match(r.text, /data: \[DONE\]\n\n$/);
  assert.is(r.record.promptTokens, 7, 'but the record has it');
  assert.is(r.record.modelAsked, 'mm');
  assert.is(r.record.modelServed, 'm');
});

test('forward: a model with no endpoint is served by its fallback', async () => {
  const r = await post(JSON.stringify({ model: 'orphan', messages: [{ role: 'user', content: 'hi' }] }));
  assert.is(r.status, 200);
  assert.is((JSON.parse(received.at(-1)!.toString('utf8')) as { model: string }).model, 'm');
  assert.ok(r.record.fallback);
  assert.is(r.record.completionTokens, 2);
});

test('account: a client that leaves before the answer still leaves one record, and nothing stays in flight', async () => {
  const before = records.length;
  const sent = received.length;
  const controller = new AbortController();
  const pending = request(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hold' }] }),
    signal: controller.signal,
  });
  await until(() => received.length > sent, 'the engine holding the request');
  assert.is(port.inFlight(), 1);
  controller.abort();
  await pending.catch(() => undefined);
  await until(() => records.length > before, 'the usage record');
  assert.is(records.length, before + 1);
  assert.is(records.at(-1)!.status, 499);
  await until(() => port.inFlight() === 0, 'nothing in flight');
});

test('parse: a client that hangs up half-way through its body leaves a 499 record at once', async () => {
  const before = records.length;
  const { port: p } = new URL(url);
  const socket = connect(Number(p), '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.write('POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{"model":"m",');
  await until(() => port.inFlight() === 1, 'the request being read');
  socket.destroy();
  await until(() => records.length > before, 'the usage record', 3_000);
  assert.is(records.at(-1)!.status, 499);
  assert.is(port.inFlight(), 0);
});

test('cut: a request cut while its body is still coming is answered once, recorded as cut, and never reaches the engine', async () => {
  const before = records.length;
  const sent = received.length;
  const body = chat();
  const { port: p } = new URL(url);
  const socket = connect(Number(p), '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  let answer = '';
  socket.on('data', (d: Buffer) => (answer += d.toString('utf8')));
  socket.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body.slice(0, 10)}`);
  await until(() => port.inFlight() === 1, 'the request being read');
  assert.is(port.cutAll(new LlmgwError('LLMGW_SHUTTING_DOWN', 'shutting down')), 1);
  await until(() => answer.includes('shutting_down'), 'the cut answer');
  socket.write(body.slice(10));
  await until(() => records.length > before, 'the usage record');
  socket.destroy();
  assert.is(records.at(-1)!.status, 503);
  assert.is(records.at(-1)!.error, 'LLMGW_SHUTTING_DOWN');
  assert.is(received.length, sent, 'the engine never saw the cut request');
  assert.is(answer.match(/HTTP\/1\.1 /g)?.length, 1, 'one answer');
  await until(() => port.inFlight() === 0, 'nothing in flight');
});

test('cut: a request cut while its engine sends a 5xx is answered with the cut, not as the engine failing', async () => {
  const sent = received.length;
  const pending = post(chat({ messages: [{ role: 'user', content: 'fail-slowly' }] }));
  await until(() => received.length > sent, 'the engine answering 500');
  assert.is(port.cutAll(new LlmgwError('LLMGW_SHUTTING_DOWN', 'shutting down')), 1);
  const r = await pending;
  assert.is(r.status, 503, r.text);
  assert.is(r.record.error, 'LLMGW_SHUTTING_DOWN');
  assert.is(received.length, sent + 1, 'tried once');
});

test.run();
