// A seeded generator of request bodies for the data port's fuzz spec: valid bodies of
// each path, mutated the ways careless clients and hostile ones get them wrong. The
// same seed gives the same bodies, so a failure replays.

import { mulberry32 } from '../support/rng.js';

export interface FuzzCase {
  path: string;
  contentType: string | null;
  body: Buffer;
  /** What was done to the body, to name a failing case. */
  what: string;
}

export type Rng = () => number;

/** The specs' seeded generator (spec/support/rng.ts). */
export const rng: (seed: number) => Rng = mulberry32;

const pick = <T>(r: Rng, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;

// Placeholders JSON.stringify leaves alone, spliced into the text afterwards: a value
// nested too deep to stringify, and keys an object literal cannot hold as own keys.
const DEEP = '\u0001deep\u0001';
const PROTO_KEY = '\u0001proto\u0001';
const spliced = (text: string, r: Rng): string =>
  text
    .replaceAll(JSON.stringify(DEEP), () => {
      const depth = pick(r, [200, 5_000, 100_000]);
      const [open, close] = r() < 0.5 ? ['[', ']'] : ['{"a":', '}'];
      return open.repeat(depth) + (open === '[' ? '' : '1') + close.repeat(depth);
    })
    .replaceAll(JSON.stringify(PROTO_KEY), () => JSON.stringify(pick(r, ['__proto__', 'constructor', 'prototype'])));

const MODEL = 'm';
const words = (r: Rng, n: number): string => Array.from({ length: n }, () => pick(r, ['alpha', 'beta', 'gamma', 'delta', 'é', '漢字', '🙂'])).join(' ');

/** A valid body of each path, small enough for the engine to answer in a few steps. */
function validBody(r: Rng): { path: string; body: Record<string, unknown> } {
  switch (Math.floor(r() * 6)) {
    case 0:
      return { path: '/v1/chat/completions', body: { model: MODEL, messages: [{ role: 'user', content: words(r, 5) }], max_tokens: 2 } };
    case 1:
      return {
        path: '/v1/chat/completions',
        body: {
          model: MODEL,
          messages: [
            { role: 'system', content: 'be brief' },
            { role: 'user', content: [{ type: 'text', text: words(r, 3) }] },
            { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'look', arguments: '{}' } }] },
            { role: 'tool', tool_call_id: 'c1', content: 'seen' },
          ],
          max_completion_tokens: 3,
          temperature: 0.5,
          top_p: 0.9,
          stop: ['\n\n'],
          tools: [{ type: 'function', function: { name: 'look', parameters: { type: 'object', properties: {} } } }],
          tool_choice: 'auto',
          seed: 7,
          top_k: 20,
        },
      };
    case 2:
      return { path: '/v1/chat/completions', body: { model: MODEL, messages: [{ role: 'user', content: words(r, 4) }], max_tokens: 2, stream: true, stream_options: { include_usage: true }, n: 2 } };
    case 3:
      return { path: '/v1/completions', body: { model: MODEL, prompt: words(r, 6), max_tokens: 2, logprobs: 1, user: 'u' } };
    case 4:
      return { path: '/v1/completions', body: { model: MODEL, prompt: [[1, 2, 3], [4, 5]], max_tokens: 1, stream: r() < 0.5 } };
    default:
      return { path: '/v1/embeddings', body: { model: MODEL, input: ['a', 'b'], encoding_format: 'float' } };
  }
}

/** Values of every wrong kind: types, ranges, sizes, strings that look like numbers. */
function oddValue(r: Rng): unknown {
  return pick(r, [
    () => ({}),
    () => [],
    () => '',
    () => 'NaN',
    () => 'Infinity',
    () => '1e308',
    () => '-0',
    () => '12',
    () => 1e308,
    () => -1e308,
    () => 2 ** 53 + 2,
    () => -1,
    () => 0,
    () => 1.5,
    () => 3,
    () => 1_000_000,
    () => true,
    () => null,
    () => [1, 'a', null],
    () => ({ include_usage: 'yes' }),
    () => Array.from({ length: 20_000 }, (_, i) => i),
    () => 'x'.repeat(100_000),
    () => '\ud800',
    () => DEEP,
    () => ({ [PROTO_KEY]: { polluted: true } }),
    () => [{ role: 'user' }],
    () => [{ role: 'nobody', content: 'x' }],
    () => [{ role: 'user', content: [{ type: 'text', text: 5 }] }],
    () => [{ role: 'user', content: [{ type: 'text' }, { type: 'image_url' }] }],
    () => [{ type: 'function', function: { name: 7 } }],
  ])();
}

const FIELDS = [
  'model', 'messages', 'prompt', 'input', 'max_tokens', 'max_completion_tokens', 'temperature', 'top_p', 'n', 'stop', 'stream',
  'stream_options', 'logprobs', 'top_logprobs', 'presence_penalty', 'frequency_penalty', 'seed', 'logit_bias', 'user',
  'response_format', 'tools', 'tool_choice', 'encoding_format', 'dimensions', 'guided_json',
];

/** One field somewhere in the body: top level, or inside a message or part. */
function mutateField(r: Rng, body: Record<string, unknown>): string {
  const messages = body['messages'];
  const m: unknown = Array.isArray(messages) && messages.length > 0 ? pick(r, messages) : null;
  if (typeof m === 'object' && m !== null && !Array.isArray(m) && r() < 0.3) {
    const key = pick(r, ['role', 'content', 'name', 'tool_calls', 'tool_call_id', PROTO_KEY]);
    const msg = m as Record<string, unknown>;
    if (r() < 0.2) delete msg[key];
    else msg[key] = oddValue(r);
    return `messages[].${key}`;
  }
  const key = pick(r, FIELDS);
  if (r() < 0.15) {
    delete body[key];
    return `-${key}`;
  }
  body[key] = oddValue(r);
  return key;
}

/** Mutations of the bytes once serialised. */
function mutateText(r: Rng, text: string): { bytes: Buffer; what: string } {
  const b = Buffer.from(text);
  switch (Math.floor(r() * 9)) {
    case 0:
      return { bytes: b.subarray(0, Math.floor(r() * b.length)), what: 'truncated' };
    case 1: {
      const at = Math.floor(r() * b.length);
      return { bytes: Buffer.concat([b.subarray(0, at), Buffer.from(pick(r, [[0xff], [0xc3], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80]])), b.subarray(at)]), what: 'invalid UTF-8' };
    }
    case 2:
      return { bytes: Buffer.from(`{"max_tokens":{},${text.slice(1)}`), what: 'duplicate key, bad one first' };
    case 3:
      return { bytes: Buffer.from(`${text.slice(0, -1)},"max_tokens":${pick(r, ['{}', '-1', '1e308', '"2"'])}}`), what: 'duplicate key, bad one last' };
    case 4:
      return { bytes: Buffer.from(pick(r, ['', ' ', 'null', '[]', '3', '"s"', 'true', '{}', '\ufeff{}', '{"model":"m"}{"model":"m"}', 'model=m&prompt=x'])), what: 'not an object' };
    case 5: {
      const copy = Buffer.from(b);
      for (let i = 0; i < 1 + Math.floor(r() * 4); i++) copy[Math.floor(r() * copy.length)] = Math.floor(r() * 256);
      return { bytes: copy, what: 'flipped bytes' };
    }
    case 6:
      return { bytes: Buffer.from(text.replace(/:(\d+)/, ':$1e999')), what: 'number out of double range' };
    default:
      return { bytes: b, what: 'as serialised' };
  }
}

const CONTENT_TYPES = ['application/json', 'application/json', 'application/json; charset=utf-8', null, 'application/x-www-form-urlencoded', 'text/plain', 'multipart/form-data; boundary=x', 'application/json; charset=latin1'];

export function fuzzCase(r: Rng): FuzzCase {
  const { path, body } = validBody(r);
  const what: string[] = [];
  const fields = r() < 0.1 ? 0 : 1 + Math.floor(r() * 3);
  for (let i = 0; i < fields; i++) what.push(mutateField(r, body));
  const text = spliced(JSON.stringify(body), r);
  const { bytes, what: how } = r() < 0.35 ? mutateText(r, text) : { bytes: Buffer.from(text), what: 'as serialised' };
  what.push(how);
  const contentType = pick(r, CONTENT_TYPES);
  return { path: r() < 0.03 ? pick(r, ['/v1/chat/completions', '/v1/completions', '/v1/embeddings']) : path, contentType, body: bytes, what: `${path} ${what.join(', ')} (${contentType ?? 'no content-type'})` };
}
