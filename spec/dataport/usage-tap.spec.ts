import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { JsonUsageTap, SseUsageTap } from '../../src/dataport/usage-tap.js';

const chunk = (content: string): string => `data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":${JSON.stringify(content)}}}]}\n\n`;
const USAGE = 'data: {"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":8}}}\n\n';
const STREAM = chunk('Hel') + chunk('lo') + chunk(' ✓') + USAGE + 'data: [DONE]\n\n';

/** Feeds `text` cut at `cuts` (byte offsets, so a multi-byte character can be split). */
function feed(tap: SseUsageTap, text: string, cuts: number[]): string {
  const bytes = Buffer.from(text);
  let out = '';
  let from = 0;
  for (const at of [...cuts, bytes.length]) {
    out += tap.push(bytes.subarray(from, at));
    from = at;
  }
  return out + tap.end();
}

test('usage is read and the usage-only chunk dropped when the client did not ask for it, however the bytes are cut', () => {
  const expected = chunk('Hel') + chunk('lo') + chunk(' ✓') + 'data: [DONE]\n\n';
  const size = Buffer.byteLength(STREAM);
  let seed = 7;
  for (let round = 0; round < 300; round++) {
    const cuts = new Set<number>();
    const k = round % 12;
    for (let i = 0; i < k; i++) cuts.add(((seed = (seed * 48271) % 2147483647) % (size - 1)) + 1);
    const tap = new SseUsageTap(true);
    assert.is(feed(tap, STREAM, [...cuts].sort((a, b) => a - b)), expected, `cuts ${[...cuts]}`);
    assert.equal(tap.usage, { promptTokens: 12, completionTokens: 3, cachedTokens: 8 });
  }
});

test('the usage chunk reaches a client that asked for it, and is still read', () => {
  const tap = new SseUsageTap(false);
  assert.is(feed(tap, STREAM, [10, 200]), STREAM);
  assert.equal(tap.usage, { promptTokens: 12, completionTokens: 3, cachedTokens: 0 + 8 });
});

test('a chunk carrying both content and usage keeps its content when usage is stripped', () => {
  // An engine may put usage on content chunks too (vLLM's stream_options.continuous_usage_stats does, on every one).
  const last = 'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"!"},"finish_reason":"stop"}],"usage":{"prompt_tokens":4,"completion_tokens":2,"total_tokens":6}}\n\n';
  const stream = chunk('Hi') + last + 'data: [DONE]\n\n';
  const tap = new SseUsageTap(true);
  assert.is(feed(tap, stream, [3, 100]), stream);
  assert.equal(tap.usage, { promptTokens: 4, completionTokens: 2, cachedTokens: 0 });
});

test('an event with no space after "data:" is read too, as SSE allows', () => {
  const tap = new SseUsageTap(true);
  assert.is(feed(tap, chunk('a') + USAGE.replace('data: ', 'data:') + 'data: [DONE]\n\n', [7]), chunk('a') + 'data: [DONE]\n\n');
  assert.equal(tap.usage, { promptTokens: 12, completionTokens: 3, cachedTokens: 8 });
});

test('a usage: null on ordinary chunks is passed through, and an engine error event is never dropped', () => {
  const withNull = chunk('a').replace('}]}', '}],"usage":null}');
  const error = 'data: {"error":{"message":"boom","type":"server_error","code":500}}\n\n';
  const tap = new SseUsageTap(true);
  assert.is(feed(tap, withNull + error + 'data: [DONE]\n\n', [5]), withNull + error + 'data: [DONE]\n\n');
  assert.is(tap.usage, null);
});

test('a JSON body passes through untouched and its usage is read at the end', () => {
  const body = Buffer.from('{"id":"x","choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}');
  const tap = new JsonUsageTap();
  const out = Buffer.concat([tap.push(body.subarray(0, 20)), tap.push(body.subarray(20))]);
  assert.ok(out.equals(body));
  assert.equal(tap.usage, { promptTokens: 5, completionTokens: 2, cachedTokens: 0 });
  const bad = new JsonUsageTap();
  bad.push(Buffer.from('<html>'));
  assert.is(bad.usage, null);
});

test.run();
