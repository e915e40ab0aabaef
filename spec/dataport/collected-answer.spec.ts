// An answer the client wants whole is asked of the engine as a stream and collected: as
// nothing reaches the client until it is whole, an engine that fails mid-way is retried
// elsewhere; one that falls silent is timed by the idle limit; an error event is the
// engine's verdict; an engine that answers JSON anyway is relayed.

import { request } from 'undici';
import * as assert from 'uvu/assert';
import { until } from '../support/until.js';
import { suite } from '../support/uvu.js';
import { startInProcess, type InProcessPort } from './in-process.js';

const test = suite('collected answers: failures mid-way (in-process data port, two engines)');

const IDLE_MS = 300;
let inProcess: InProcessPort;
/** Requests each prompt has had, over both engines: the first attempt of a prompt is the one that misbehaves. */
const seen = new Map<string, number>();
/** Prompts whose request the engine saw end before it finished answering. */
const cancelled: string[] = [];
/** Tokens the 'slow' engine has written. */
let slowTokens = 0;
const chunk = (delta: object, finish: string | null = null): string =>
  `data: ${JSON.stringify({ id: 'chatcmpl-x', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`;
const USAGE = `data: ${JSON.stringify({ id: 'chatcmpl-x', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [], usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } })}\n\n`;
const whole = chunk({ role: 'assistant', content: '' }) + chunk({ content: 'o' }) + chunk({ content: 'k' }, 'stop') + USAGE + 'data: [DONE]\n\n';

function engine(req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse, raw: Buffer): void {
  const body = JSON.parse(raw.toString('utf8')) as { messages: { content: string }[]; stream?: boolean };
  const prompt = body.messages[0]!.content;
  const n = (seen.get(prompt) ?? 0) + 1;
  seen.set(prompt, n);
  if (prompt === 'json anyway') {
    res.writeHead(200, { 'content-type': 'application/json' });
    return void res.end(JSON.stringify({ id: 'j', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: 'as json' }, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 } }));
  }
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.flushHeaders();
  if (n === 1 && prompt === 'drops') return void res.write(chunk({ role: 'assistant', content: '' }) + chunk({ content: 'o' }), () => req.socket.destroy());
  if (n === 1 && prompt === 'shuts down') return void res.end(chunk({ role: 'assistant', content: '' }) + 'data: {"error":{"message":"The engine is shutting down","type":"ServiceUnavailableError","param":null,"code":503}}\n\ndata: [DONE]\n\n');
  if (n === 1 && prompt === 'fails midway') return void res.end(chunk({ role: 'assistant', content: '' }) + chunk({ content: 'o' }) + 'data: {"error":{"message":"CUDA error","type":"BadRequestError","param":null,"code":400}}\n\ndata: [DONE]\n\n');
  if (n === 1 && prompt === 'no usage') return void res.end(chunk({ role: 'assistant', content: '' }) + chunk({ content: 'ok' }, 'stop'));
  // An engine that ignores stream_options.include_usage, and ends its stream properly.
  if (prompt === 'ignores usage') return void res.end(chunk({ role: 'assistant', content: '' }) + chunk({ content: 'o' }) + chunk({ content: 'k' }, 'stop') + 'data: [DONE]\n\n');
  if (n === 1 && prompt === 'garbage') {
    res.write(chunk({ role: 'assistant', content: '' }) + 'data: {not json\n\n');
    const tick = setInterval(() => res.write(chunk({ content: 't' })), 50);
    return void res.on('close', () => {
      clearInterval(tick);
      cancelled.push(prompt);
    });
  }
  if (prompt === 'refuses') return void res.end(chunk({ role: 'assistant', content: '' }) + 'data: {"error":{"message":"bad grammar","type":"BadRequestError","param":null,"code":400}}\n\ndata: [DONE]\n\n');
  if (prompt === 'stalls') return void res.write(chunk({ role: 'assistant', content: '' })); // and then nothing
  if (prompt === 'slow') {
    // A token every 50 ms until the client leaves: the engine sees its request end.
    const tick = setInterval(() => res.write(chunk({ content: 't' }), () => slowTokens++), 50);
    return void res.on('close', () => {
      clearInterval(tick);
      cancelled.push(prompt);
    });
  }
  res.end(whole);
}

test.before(async () => {
  inProcess = await startInProcess(
    `models: [{ name: m }]
router: { idle_timeout_ms: ${IDLE_MS}, admission: { enabled: false } }
endpoints:
  - { id: a, url: "http://127.0.0.1:9", models: [m] }
  - { id: b, url: "http://127.0.0.1:9", models: [m] }
`,
    { a: engine, b: engine },
  );
});

test.after(async () => {
  await inProcess.close();
});

// Each test starts from healthy engines: one test's failures must not put an engine in
// cooldown for the next, whose retry needs both.
test.before.each(() => {
  for (const id of ['a', 'b']) inProcess.table.get(id)!.health.succeeded();
});

async function ask(content: string): Promise<{ status: number; headers: Record<string, unknown>; body: Record<string, unknown> }> {
  const before = inProcess.records.length;
  const res = await request(`${inProcess.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content }] }),
  });
  const body = (await res.body.json()) as Record<string, unknown>;
  await until(() => inProcess.records.length > before, 'the record');
  return { status: res.statusCode, headers: res.headers, body };
}

const content = (body: Record<string, unknown>): unknown => (body.choices as { message: { content: unknown } }[])[0]!.message.content;

test('an engine that drops mid-answer: nothing reached the client, so another engine answers it whole', async () => {
  const r = await ask('drops');
  assert.is(r.status, 200);
  assert.is(content(r.body), 'ok');
  assert.is(seen.get('drops'), 2);
  const record = inProcess.records.at(-1)!;
  assert.is(record.attempts, 2);
  assert.is(record.completionTokens, 2, 'billed from the answer that was served');
});

test("an engine's error event: 503 (shutting down) is retried elsewhere; a 400 reaches the client in the OpenAI shape", async () => {
  const down = await ask('shuts down');
  assert.is(down.status, 200);
  assert.is(content(down.body), 'ok');
  assert.is(inProcess.records.at(-1)!.attempts, 2);
  const refused = await ask('refuses');
  assert.is(refused.status, 400);
  const error = refused.body.error as { message: string; type: string };
  assert.match(error.message, /^bad grammar \(endpoint [ab]\)$/);
  assert.is(error.type, 'invalid_request_error');
  assert.is(inProcess.records.at(-1)!.attempts, 1, 'a refusal is not retried');
});

test("vLLM's error event after the answer began (its default code, 400) is the engine failing: retried elsewhere", async () => {
  const r = await ask('fails midway');
  assert.is(r.status, 200, JSON.stringify(r.body));
  assert.is(content(r.body), 'ok');
  assert.is(inProcess.records.at(-1)!.attempts, 2);
});

test('a stream cut after its last finish but before its usage is not whole: retried, and billed from the answer served', async () => {
  const r = await ask('no usage');
  assert.is(r.status, 200);
  assert.is(inProcess.records.at(-1)!.attempts, 2);
  assert.is(inProcess.records.at(-1)!.completionTokens, 2);
});

test("a stream that is not OpenAI chunks: retried elsewhere, and the first engine's request ended", async () => {
  const r = await ask('garbage');
  assert.is(r.status, 200);
  assert.is(content(r.body), 'ok');
  assert.is(inProcess.records.at(-1)!.attempts, 2);
  await until(() => cancelled.includes('garbage'), 'the engine sees the request end');
});

test('an engine silent mid-answer past the idle limit: a 504 the client is told not to retry', async () => {
  const failures = (id: string): number => inProcess.table.get(id)!.health.consecutiveFailures;
  const r = await ask('stalls');
  assert.is(r.status, 504);
  assert.is(r.headers['x-should-retry'], 'false');
  assert.match(String((r.body.error as { message: string }).message), /sent nothing for 300 ms mid-answer \(router\.idle_timeout_ms\)/);
  const record = inProcess.records.at(-1)!;
  assert.is(record.error, 'LLMGW_UPSTREAM_TIMEOUT');
  assert.is(failures(record.endpoint!), 1, 'the silent engine is blamed');
  assert.is(seen.get('stalls'), 1, 'not retried: the request may be what is slow');
});

test("a client that leaves while its answer is collected cancels the engine's request, and is charged for what it generated", async () => {
  const before = inProcess.records.length;
  const gone = new AbortController();
  const asked = request(`${inProcess.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'slow' }] }),
    signal: gone.signal,
  });
  asked.catch(() => undefined);
  // The engine and this data port share one event loop: by the fourth token written, the
  // port has read the first three.
  await until(() => slowTokens >= 4, 'the engine has generated four tokens');
  gone.abort();
  await until(() => cancelled.includes('slow'), 'the engine sees the request end');
  await until(() => inProcess.records.length > before, 'the record');
  const record = inProcess.records.at(-1)!;
  assert.is(record.status, 499);
  assert.ok(record.usageEstimated);
  assert.ok(record.completionTokens >= 2, `charged ${record.completionTokens} completion tokens`);
  assert.ok(record.ttftMs !== null && record.ttftMs > 0, 'its first token came');
});

test('an engine that ignores include_usage: the answer, whole or streamed, is charged by its chunks, marked estimated', async () => {
  const whole = await ask('ignores usage');
  assert.is(whole.status, 200);
  assert.is(content(whole.body), 'ok');
  assert.is(whole.body.usage, null, 'the engine sent none; none is made up for the client');
  let record = inProcess.records.at(-1)!;
  assert.equal([record.completionTokens, record.usageEstimated, record.attempts], [2, true, 1]);
  assert.ok(record.promptTokens > 0, 'the prompt at four characters a token');

  const before = inProcess.records.length;
  const res = await request(`${inProcess.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'ignores usage' }], stream: true }),
  });
  assert.match(await res.body.text(), /data: \[DONE\]/);
  await until(() => inProcess.records.length > before, 'the record');
  record = inProcess.records.at(-1)!;
  assert.equal([record.status, record.completionTokens, record.usageEstimated], [200, 2, true]);
});

test('an engine that answers a stream request with JSON: its answer is relayed as it came', async () => {
  const r = await ask('json anyway');
  assert.is(r.status, 200);
  assert.is(content(r.body), 'as json');
  assert.is(inProcess.records.at(-1)!.completionTokens, 2);
});

test.run();
