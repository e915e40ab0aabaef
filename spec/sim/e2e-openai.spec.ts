// The sim as a client sees it: the real CLI process, the official openai client, raw
// HTTP for what a client library would hide (wire format, malformed bodies).

import { request as httpRequest } from 'node:http';
import OpenAI from 'openai';
import { suite } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { request } from 'undici';
import type { SimProcess } from './helpers.js';
import { metric, startSim } from './helpers.js';
import { until } from '../support/until.js';

const test = suite('sim e2e: OpenAI API (CLI process, openai client)');
const MODEL = 'llama-3.1-8b-sim';
let sim: SimProcess;
let other: SimProcess; // same model, another seed
let client: OpenAI;

const messages = [
  { role: 'system' as const, content: 'You are a terse assistant.' },
  { role: 'user' as const, content: 'Name three rivers.' },
];

test.before(async () => {
  [sim, other] = await Promise.all([startSim(MODEL, ['--speed', '50', '--seed', '7']), startSim(MODEL, ['--speed', '50', '--seed', '8'])]);
  client = new OpenAI({ baseURL: `${sim.url}/v1`, apiKey: 'unused', maxRetries: 0 });
});
test.after(async () => {
  await Promise.all([sim?.stop(), other?.stop()]);
});

test('GET /v1/models lists the served model the way vLLM does', async () => {
  const models = await client.models.list();
  assert.is(models.data.length, 1);
  const m = models.data[0]! as unknown as Record<string, unknown>;
  assert.is(m['id'], MODEL);
  assert.is(m['object'], 'model');
  assert.is(m['owned_by'], 'vllm');
  assert.is(m['max_model_len'], 32768);
  assert.is(m['root'], MODEL);
});

test('GET /health is 200 with an empty body', async () => {
  const res = await request(`${sim.url}/health`);
  assert.is(res.statusCode, 200);
  assert.is(await res.body.text(), '');
});

test('non-streaming chat completion: text, finish_reason, usage with cached_tokens', async () => {
  const r = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 12 });
  assert.match(r.id, /^chatcmpl-/);
  assert.is(r.object, 'chat.completion');
  assert.is(r.model, MODEL);
  assert.is(r.choices.length, 1);
  assert.is(r.choices[0]!.message.role, 'assistant');
  assert.ok((r.choices[0]!.message.content ?? '').length > 0);
  assert.is(r.choices[0]!.finish_reason, 'length');
  assert.is(r.usage!.completion_tokens, 12);
  assert.ok(r.usage!.prompt_tokens > 10);
  assert.is(r.usage!.total_tokens, r.usage!.prompt_tokens + 12);
  assert.type(r.usage!.prompt_tokens_details?.cached_tokens, 'number');
});

test('without max_tokens the model stops on its own after 16..128 tokens', async () => {
  const r = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Say anything.' }] });
  assert.is(r.choices[0]!.finish_reason, 'stop');
  assert.ok(r.usage!.completion_tokens >= 16 && r.usage!.completion_tokens <= 128, String(r.usage!.completion_tokens));
});

test('streaming chat completion: role first, one id, finish on the last content chunk, usage chunk', async () => {
  const stream = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 12, stream: true, stream_options: { include_usage: true } });
  const chunks = [];
  for await (const c of stream) chunks.push(c);
  const ids = new Set(chunks.map((c) => c.id));
  const created = new Set(chunks.map((c) => c.created));
  assert.is(ids.size, 1);
  assert.is(created.size, 1);
  assert.is(chunks[0]!.choices[0]!.delta.role, 'assistant');
  const content = chunks.filter((c) => c.choices.length > 0 && c.choices[0]!.delta.content);
  assert.is(content.length, 12, 'one chunk per token when the reader keeps up');
  assert.is(content.at(-1)!.choices[0]!.finish_reason, 'length', 'finish_reason rides on the last content chunk');
  assert.ok(content.slice(0, -1).every((c) => c.choices[0]!.finish_reason === null));
  const last = chunks.at(-1)!;
  assert.equal(last.choices, []);
  assert.is(last.usage!.completion_tokens, 12);
  assert.type(last.usage!.prompt_tokens_details?.cached_tokens, 'number');

  const whole = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 12 });
  assert.is(content.map((c) => c.choices[0]!.delta.content).join(''), whole.choices[0]!.message.content, 'streamed and whole text agree');
});

test('SSE on the wire is exactly `data: <json>\\n\\n` … `data: [DONE]\\n\\n`', async () => {
  const res = await request(`${sim.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, messages, max_tokens: 3, stream: true }),
  });
  assert.is(res.statusCode, 200);
  assert.match(String(res.headers['content-type']), /^text\/event-stream/);
  const body = await res.body.text();
  assert.ok(body.endsWith('data: [DONE]\n\n'));
  const events = body.split('\n\n').filter(Boolean);
  assert.ok(events.every((e) => e.startsWith('data: ') && !e.includes('\n')), body);
  assert.is(events.length, 1 + 3 + 1, 'role chunk, 3 tokens, [DONE]: no usage chunk unless asked');
  for (const e of events.slice(0, -1)) JSON.parse(e.slice('data: '.length));
});

test('completions.create works, streamed and not', async () => {
  const r = await client.completions.create({ model: MODEL, prompt: 'Once upon a time', max_tokens: 7 });
  assert.is(r.object, 'text_completion');
  assert.is(r.choices[0]!.finish_reason, 'length');
  assert.is(r.usage!.completion_tokens, 7);
  const stream = await client.completions.create({ model: MODEL, prompt: 'Once upon a time', max_tokens: 7, stream: true, stream_options: { include_usage: true } });
  let text = '';
  let usage: OpenAI.CompletionUsage | null | undefined;
  for await (const c of stream) {
    text += c.choices[0]?.text ?? '';
    if (c.usage) usage = c.usage;
  }
  assert.is(text, r.choices[0]!.text);
  assert.is(usage?.completion_tokens, 7);
});

test('n > 1 and batched prompts give one choice each, usage summed', async () => {
  const r = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 5, n: 3 });
  assert.equal(r.choices.map((c) => c.index), [0, 1, 2]);
  assert.is(new Set(r.choices.map((c) => c.message.content)).size, 3, 'each choice has its own text');
  assert.is(r.usage!.completion_tokens, 15);
  const c = await client.completions.create({ model: MODEL, prompt: ['alpha beta', 'gamma delta'], max_tokens: 4 });
  assert.equal(c.choices.map((x) => x.index), [0, 1]);
  assert.is(c.usage!.completion_tokens, 8);
});

test('the same seed and request give the same text; another engine seed or request seed another', async () => {
  const ask = (cl: OpenAI, seed?: number): Promise<string> =>
    cl.chat.completions.create({ model: MODEL, messages, max_tokens: 30, ...(seed === undefined ? {} : { seed }) }).then((r) => r.choices[0]!.message.content ?? '');
  const otherClient = new OpenAI({ baseURL: `${other.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  const [a, b, c, d] = await Promise.all([ask(client), ask(client), ask(otherClient), ask(client, 42)]);
  assert.is(a, b);
  assert.is.not(a, c, 'engine seed 8 ≠ seed 7');
  assert.is.not(a, d, 'request seed');
  assert.is(await ask(client, 42), d);
});

test('an unknown model is a 404 that the openai client surfaces as NotFoundError', async () => {
  try {
    await client.chat.completions.create({ model: 'no-such-model', messages, max_tokens: 2 });
    assert.unreachable('should have failed');
  } catch (err) {
    assert.instance(err, OpenAI.NotFoundError);
    const e = err as InstanceType<typeof OpenAI.NotFoundError>;
    assert.is(e.status, 404);
    assert.is(e.message, '404 The model `no-such-model` does not exist.');
  }
});

async function post(path: string, body: string | Buffer): Promise<{ status: number; json: { error: { message: string; type: string; param: string | null; code: number } } }> {
  const res = await request(`${sim.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  return { status: res.statusCode, json: (await res.body.json()) as never };
}

test('a malformed body is a 400 in the OpenAI error shape (vLLM ≥ 0.10.1: code = status)', async () => {
  const { status, json } = await post('/v1/chat/completions', Buffer.from('{"model": "x", "messages": [', 'utf8'));
  assert.is(status, 400);
  assert.equal(Object.keys(json.error).sort(), ['code', 'message', 'param', 'type']);
  assert.is(json.error.code, 400);
  assert.is(json.error.type, 'BadRequestError');
  assert.match(json.error.message, /not valid JSON/);
});

test('validation errors name the field and say what to do', async () => {
  const cases: [string, unknown, number, RegExp, string | null][] = [
    ['/v1/chat/completions', { model: MODEL }, 400, /'messages' is required/, 'messages'],
    ['/v1/chat/completions', { model: MODEL, messages: [] }, 400, /non-empty/, 'messages'],
    ['/v1/chat/completions', { model: MODEL, messages, stream: 'yes' }, 400, /'stream' must be a boolean/, 'stream'],
    ['/v1/chat/completions', { model: MODEL, messages, stream_options: { include_usage: true } }, 400, /only be defined when `stream=True`/, 'stream_options'],
    ['/v1/chat/completions', { model: MODEL, messages, max_tokens: 0 }, 400, /'max_tokens' must be an integer ≥ 1/, 'max_tokens'],
    ['/v1/chat/completions', { model: MODEL, messages, max_tokens: 32768 }, 400, /maximum context length is 32768 tokens/, 'max_tokens'],
    ['/v1/chat/completions', { model: MODEL, messages: [{ content: 'no role' }] }, 400, /messages\[0\]\.role/, 'messages'],
    ['/v1/completions', { model: MODEL }, 400, /'prompt' is required/, 'prompt'],
    ['/v1/completions', { model: MODEL, prompt: [1.5] }, 400, /'prompt' must be/, 'prompt'],
    ['/v1/completions', { model: 'other', prompt: 'x' }, 404, /The model `other` does not exist/, 'model'],
    ['/v1/chat/completions', [1, 2], 400, /JSON object/, null],
  ];
  for (const [path, body, status, message, param] of cases) {
    const r = await post(path, JSON.stringify(body));
    assert.is(r.status, status, JSON.stringify(body));
    assert.match(r.json.error.message, message);
    assert.is(r.json.error.param, param);
    assert.is(r.json.error.code, status);
  }
});

test('a prompt longer than max_model_len is refused before it reaches the engine', async () => {
  const long = 'word '.repeat(33_000);
  const r = await post('/v1/completions', JSON.stringify({ model: MODEL, prompt: long, max_tokens: 1 }));
  assert.is(r.status, 400);
  assert.match(r.json.error.message, /However, your request has 3300[01] input tokens/);
});

test('unknown path 404, wrong method 405 with Allow, oversized body 413', async () => {
  const notFound = await request(`${sim.url}/v2/nothing`);
  assert.is(notFound.statusCode, 404);
  assert.is(((await notFound.body.json()) as { error: { code: number } }).error.code, 404);
  const wrong = await request(`${sim.url}/v1/chat/completions`);
  assert.is(wrong.statusCode, 405);
  assert.is(wrong.headers['allow'], 'POST');
  await wrong.body.dump();
  const big = Buffer.alloc(33 * 1024 * 1024, 0x20);
  const tooLarge = await request(`${sim.url}/v1/chat/completions`, { method: 'POST', body: big });
  assert.is(tooLarge.statusCode, 413);
  assert.is(((await tooLarge.body.json()) as { error: { code: number } }).error.code, 413);
});

test('POST /tokenize counts a prompt or a conversation', async () => {
  const res = await request(`${sim.url}/tokenize`, { method: 'POST', body: JSON.stringify({ model: MODEL, messages }) });
  const j = (await res.body.json()) as { count: number; tokens: number[]; max_model_len: number };
  const r = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 1 });
  assert.is(j.count, r.usage!.prompt_tokens, 'the same count the completion reports');
  assert.is(j.tokens.length, j.count);
  assert.is(j.max_model_len, 32768);
});

test('a reader that stops reading gets merged deltas instead of an unbounded queue of chunks', async () => {
  // 8 choices × 8000 tokens would be ~15 MB of one-token chunks: far more than the socket
  // buffers hold, so the server must see backpressure while this client is paused.
  const body = JSON.stringify({ model: MODEL, messages, max_tokens: 8000, n: 8, stream: true });
  const lengthBefore = await metric(sim.url, 'vllm:request_success_total', { finished_reason: 'length' });
  const raw = await new Promise<string>((resolve, reject) => {
    const req = httpRequest(`${sim.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      res.pause();
      until(async () => (await metric(sim.url, 'vllm:request_success_total', { finished_reason: 'length' })) >= lengthBefore + 8, 'all 8 choices generated', 20_000)
        .then(() => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (d: string) => (text += d));
          res.on('end', () => resolve(text));
          res.resume();
        }, reject);
    });
    req.on('error', reject);
    req.end(body);
  });
  assert.ok(raw.endsWith('data: [DONE]\n\n'));
  const events = raw.split('\n\n').filter((e) => e.startsWith('data: {')).map((e) => JSON.parse(e.slice(6)));
  // Unmerged, every one of the 64000 tokens would be its own event.
  assert.ok(events.length < 8 * 8000 * 0.9, `${events.length} events for 64000 tokens`);
  const longest = Math.max(...events.map((e) => (e.choices[0].delta.content ?? '').length));
  assert.ok(longest > 1000, `the longest merged delta has ${longest} characters`);
  const texts = new Map<number, string>();
  const finishes = new Map<number, string>();
  for (const e of events) {
    const c = e.choices[0];
    texts.set(c.index, (texts.get(c.index) ?? '') + (c.delta.content ?? ''));
    if (c.finish_reason) finishes.set(c.index, c.finish_reason);
  }
  assert.is(finishes.size, 8);
  const whole = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 8000, n: 8 });
  for (const c of whole.choices) assert.is(texts.get(c.index), c.message.content, `choice ${c.index}: merging lost or reordered nothing`);
});

test.run();
