// Collecting an engine's stream into the answer a client asked for whole: the merge of
// chat and completions chunks, errors and broken streams, and that where the engine's
// reads happen to be cut never changes the answer.

import * as assert from 'uvu/assert';
import { StreamedAnswer, streamable } from '../../src/dataport/streamed-answer.js';
import { mulberry32 } from '../support/rng.js';
import { suite } from '../support/uvu.js';

const test = suite('streamed answer: an engine stream collected into one body');

const sse = (...events: object[]): string => events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('') + 'data: [DONE]\n\n';
const head = { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'm' };
const usage = { prompt_tokens: 9, completion_tokens: 3, total_tokens: 12, prompt_tokens_details: { cached_tokens: 4 } };

function collect(text: string | Buffer, cuts: number[] = []): StreamedAnswer {
  const bytes = typeof text === 'string' ? Buffer.from(text) : text;
  const a = new StreamedAnswer();
  let from = 0;
  for (const at of [...cuts, bytes.length]) {
    if (!a.push(bytes.subarray(from, at))) return a;
    from = at;
  }
  a.end();
  return a;
}

const chat = sse(
  { ...head, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }] },
  { ...head, choices: [{ index: 0, delta: { content: 'Ça va ' }, logprobs: null, finish_reason: null }] },
  { ...head, system_fingerprint: 'fp1', choices: [{ index: 0, delta: { content: '✓🙂' }, logprobs: null, finish_reason: 'stop', stop_reason: null }] },
  { ...head, choices: [], usage },
);

test('chat: deltas become one message; id, created, model from the chunks; usage from the last', () => {
  const a = collect(chat);
  assert.ok(a.complete);
  assert.equal(a.usage, { promptTokens: 9, completionTokens: 3, cachedTokens: 4 });
  assert.equal(JSON.parse(a.json()), {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 1_700_000_000,
    model: 'm',
    choices: [{ index: 0, message: { role: 'assistant', content: 'Ça va ✓🙂', tool_calls: [] }, logprobs: null, finish_reason: 'stop', stop_reason: null }],
    usage,
    system_fingerprint: 'fp1',
  });
});

test('completions with several choices interleaved: each index its own text, in index order', () => {
  const c = { id: 'cmpl-1', object: 'text_completion', created: 1, model: 'm' };
  const a = collect(
    sse(
      { ...c, choices: [{ index: 1, text: 'b', logprobs: null, finish_reason: null }] },
      { ...c, choices: [{ index: 0, text: 'a', logprobs: null, finish_reason: null }] },
      { ...c, choices: [{ index: 1, text: 'B', logprobs: null, finish_reason: 'length' }] },
      { ...c, choices: [{ index: 0, text: 'A', logprobs: null, finish_reason: 'stop' }] },
      { ...c, choices: [], usage },
    ),
  );
  const body = JSON.parse(a.json()) as { object: string; choices: { index: number; text: string; finish_reason: string }[] };
  assert.is(body.object, 'text_completion');
  assert.equal(
    body.choices.map((x) => [x.index, x.text, x.finish_reason]),
    [
      [0, 'aA', 'stop'],
      [1, 'bB', 'length'],
    ],
  );
});

test('where the reads are cut never changes the answer, a character split across two reads included', () => {
  const whole = collect(chat).json();
  const bytes = Buffer.from(chat);
  const r = mulberry32(11);
  const int = (lo: number, hi: number): number => lo + Math.floor(r() * (hi - lo + 1));
  for (let run = 0; run < 300; run++) {
    const cuts = Array.from({ length: int(1, 12) }, () => int(1, bytes.length - 1)).sort((x, y) => x - y);
    assert.is(collect(bytes, cuts).json(), whole, `cut at ${cuts.join(',')}`);
  }
  assert.is(collect(chat.replace(/data: /g, 'data:')).json(), whole, "'data:' without its space");
});

test("an error event is the engine's verdict: its status from the code, 500 where it has none", () => {
  const a = collect(`data: ${JSON.stringify({ ...head, choices: [{ index: 0, delta: { content: 'x' } }] })}\n\ndata: {"error":{"message":"shutting down","code":503}}\n\ndata: [DONE]\n\n`);
  assert.equal(a.error, { status: 503, body: '{"error":{"message":"shutting down","code":503}}', midway: true });
  assert.not.ok(a.complete);
  const first = collect(`data: ${JSON.stringify({ ...head, choices: [{ index: 0, delta: { role: 'assistant', content: '' } }] })}\n\ndata: {"error":{"message":"bad","code":400}}\n\n`);
  assert.equal(first.error, { status: 400, body: '{"error":{"message":"bad","code":400}}', midway: false }, 'before any text: the role chunk alone is not the answer begun');
  assert.is(collect('data: {"object":"error","message":"bad","code":"oops"}\n\n').error?.status, 500, 'the flat older shape, a code that is no status');
});

test('a stream that is not OpenAI chunks is malformed; one that ends early is not complete', () => {
  assert.match(collect('data: not json\n\n').malformed ?? '', /not JSON/);
  assert.match(collect('data: [1]\n\n').malformed ?? '', /not an object/);
  assert.match(collect('data: {"id":"x"}\n\n').malformed ?? '', /without choices/);
  const cut = chat.slice(0, chat.indexOf('"finish_reason":"stop"') - 200);
  assert.not.ok(collect(cut).complete, 'no [DONE] and a choice unfinished');
  const noDone = chat.slice(0, chat.indexOf('data: [DONE]'));
  assert.ok(collect(noDone).complete, 'no [DONE], but its usage came with every choice finished: the answer is whole');
  const noUsage = chat.slice(0, chat.indexOf('data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[],'));
  assert.match(noUsage, /"finish_reason":"stop"/);
  assert.not.ok(collect(noUsage).complete, 'cut after the last finish, before the usage: not whole (choices may be missing, nothing to bill)');
  assert.not.ok(collect('').complete, 'nothing at all');
  assert.ok(collect(': keep-alive\n\n' + chat).complete, 'comments are skipped');
  const bound = 64 * 1024;
  const endless = new StreamedAnswer(bound);
  const piece = Buffer.from(`data: ${JSON.stringify({ ...head, choices: [{ index: 0, delta: { content: 'x'.repeat(1_000) } }] })}\n\n`);
  let pushes = 0;
  while (pushes < 1_000 && endless.push(piece)) pushes++;
  assert.is(pushes, Math.floor(bound / piece.length), 'an engine that streams without end is cut off at the bound');
  assert.ok(endless.tooLarge);
  assert.not.ok(endless.complete);
  const unended = new StreamedAnswer();
  let reads = 0;
  while (reads < 100 && unended.push(Buffer.alloc(64 * 1024, 0x78))) reads++;
  assert.is(reads, 16, 'one event that never ends is given up on past 1 MiB');
  assert.match(unended.malformed ?? '', /an event of more than 1048576 bytes/);
});

test('only chat and completions without options a stream would change are collected', () => {
  const body = { model: 'm', messages: [] };
  assert.ok(streamable('/v1/chat/completions', body));
  assert.ok(streamable('/v1/completions', { model: 'm', prompt: 'x', logprobs: null, echo: false }));
  assert.not.ok(streamable('/v1/embeddings', { model: 'm', input: 'x' }));
  for (const extra of [{ logprobs: true }, { logprobs: 2 }, { top_logprobs: 3 }, { prompt_logprobs: 1 }, { best_of: 2 }, { echo: true }, { tools: [{}] }, { stream_options: {} }]) {
    assert.not.ok(streamable('/v1/chat/completions', { ...body, ...extra }), JSON.stringify(extra));
  }
});

test.run();
