import OpenAI from 'openai';
import * as assert from 'uvu/assert';
import { maxTokensFault, parseRequestBody, validateRequest, type RequestFault } from '../../src/dataport/validation/index.js';
import { MAX_DEPTH } from '../../src/dataport/validation/request-shape.js';
import { test } from '../support/uvu.js';

const CHAT = '/v1/chat/completions';
const COMPLETIONS = '/v1/completions';
const EMBEDDINGS = '/v1/embeddings';
const chat = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({ model: 'm', messages: [{ role: 'user', content: 'hi' }], ...extra });
const parsed = (json: string): Record<string, unknown> => JSON.parse(json) as Record<string, unknown>;

function refused(path: string, body: Record<string, unknown>, param: string | null): RequestFault {
  const fault = validateRequest(path, body);
  assert.ok(fault, `expected a body to be refused at ${String(param)}`);
  assert.is(fault.param, param, fault.message);
  // Words for a client author: the field first, never ajv's own phrasing.
  assert.ok(fault.message.startsWith(param ?? 'the '), fault.message);
  assert.not.match(fault.message, /must NOT|should be|must match pattern/);
  return fault;
}

test('each kind of fault names the field it is in, as the OpenAI param', () => {
  const cases: [Record<string, unknown>, string][] = [
    [chat({ max_tokens: {} }), 'max_tokens'],
    [chat({ max_tokens: 1e308 }), 'max_tokens'],
    [chat({ max_tokens: 0 }), 'max_tokens'],
    [chat({ max_tokens: 1.5 }), 'max_tokens'],
    [chat({ max_completion_tokens: '10' }), 'max_completion_tokens'],
    [chat({ temperature: -0.5 }), 'temperature'],
    [chat({ top_p: -0.1 }), 'top_p'],
    [chat({ n: 1000 }), 'n'],
    [chat({ presence_penalty: 3 }), 'presence_penalty'],
    [chat({ frequency_penalty: 'high' }), 'frequency_penalty'],
    [chat({ seed: 2 ** 60 }), 'seed'],
    [chat({ stop: { a: 1 } }), 'stop'],
    [chat({ stop: ['a', 7] }), 'stop[1]'],
    [chat({ stream: 'yes' }), 'stream'],
    [chat({ stream: true, stream_options: 3 }), 'stream_options'],
    [chat({ stream: true, stream_options: { include_usage: 'yes' } }), 'stream_options.include_usage'],
    [chat({ stream_options: { include_usage: true } }), 'stream_options'],
    [chat({ logprobs: 1 }), 'logprobs'],
    [chat({ top_logprobs: 21 }), 'top_logprobs'],
    [chat({ logit_bias: { '50256': -101 } }), 'logit_bias[50256]'],
    [chat({ logit_bias: { word: 1 } }), 'logit_bias.word'],
    [chat({ user: 42 }), 'user'],
    [chat({ response_format: { type: 'xml' } }), 'response_format.type'],
    [chat({ response_format: { type: 'json_schema' } }), 'response_format.json_schema'],
    [chat({ tools: [{ type: 'function', function: { name: 'has space' } }] }), 'tools[0].function.name'],
    [chat({ tools: [{ type: 'function' }] }), 'tools[0].function'],
    [chat({ tool_choice: 'sometimes' }), 'tool_choice'],
    [chat({ model: '' }), 'model'],
    [chat({ model: 7 }), 'model'],
    [{ messages: [{ role: 'user', content: 'hi' }] }, 'model'],
    [{ model: 'm' }, 'messages'],
    [chat({ messages: [] }), 'messages'],
    [chat({ messages: 'hi' }), 'messages'],
    [chat({ messages: ['hi'] }), 'messages[0]'],
    [chat({ messages: [{ content: 'hi' }] }), 'messages[0].role'],
    [chat({ messages: [{ role: 'robot', content: 'hi' }] }), 'messages[0].role'],
    [chat({ messages: [{ role: 'user' }] }), 'messages[0].content'],
    [chat({ messages: [{ role: 'user', content: 3 }] }), 'messages[0].content'],
    [chat({ messages: [{ role: 'user', content: [{ text: 'x' }] }] }), 'messages[0].content[0].type'],
    [chat({ messages: [{ role: 'user', content: [{ type: 'text', text: 3 }] }] }), 'messages[0].content[0].text'],
    [chat({ messages: [{ role: 'user', content: [{ type: 'text' }] }] }), 'messages[0].content[0].text'],
    [chat({ messages: [{ role: 'user', content: 'a', name: 3 }] }), 'messages[0].name'],
    [chat({ messages: [{ role: 'tool', content: 'x' }] }), 'messages[0].tool_call_id'],
    [chat({ messages: [{ role: 'assistant', tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: {} } }] }] }), 'messages[0].tool_calls[0].function.arguments'],
    [chat({ messages: [{ role: 'user', content: 'x' }, { role: 'assistant', content: 7 }] }), 'messages[1].content'],
  ];
  for (const [body, param] of cases) refused(CHAT, body, param);
  assert.match(refused(CHAT, chat({ max_tokens: {} }), 'max_tokens').message, 'max_tokens must be an integer from 1 to');
  assert.match(refused(CHAT, chat({ messages: [{ role: 'robot', content: 'hi' }] }), 'messages[0].role').message, 'user, assistant');
});

test('completions and embeddings: prompt and input are text or token ids, never empty', () => {
  for (const prompt of [undefined, '', [], [''], ['a', 3], [1, -1], [1, 2.5], [[1], []], [[1], ['a']], { text: 'a' }, 7]) {
    refused(COMPLETIONS, { model: 'm', prompt }, 'prompt');
    refused(EMBEDDINGS, { model: 'm', input: prompt }, 'input');
  }
  refused(COMPLETIONS, { model: 'm', prompt: 'a', logprobs: true }, 'logprobs');
  refused(EMBEDDINGS, { model: 'm', input: 'a', encoding_format: 'hex' }, 'encoding_format');
  refused(EMBEDDINGS, { model: 'm', input: 'a', dimensions: 0 }, 'dimensions');
});

test('valid bodies of each path pass, nulls included where OpenAI takes them', () => {
  const ok: [string, Record<string, unknown>][] = [
    [CHAT, chat()],
    [CHAT, chat({ max_tokens: null, temperature: null, stop: null, stream: null, stream_options: null, n: null, seed: -3, logit_bias: { '50256': -100, '11': 2.5 } })],
    [CHAT, chat({ stream: true, stream_options: { include_usage: true } })],
    // What vLLM and SGLang take beyond OpenAI's bounds: clients written for them send it.
    [CHAT, chat({ temperature: 3, min_p: 0.1, stop: ['\n\n', 'Question:', '</s>', '<|im_end|>', '<|eot_id|>', 'Q:'] })],
    [CHAT, chat({ response_format: { type: 'structural_tag', structures: [{ begin: '<f>', schema: { type: 'object' }, end: '</f>' }], triggers: ['<f>'] } })],
    [COMPLETIONS, { model: 'm', prompt: 'Q: 2+2\nA:', stop: ['\n', 'Q:', 'A:', '\n\n', '</s>'], temperature: 0 }],
    [CHAT, chat({ stop: 'END', temperature: 0, top_p: 1, n: 128, presence_penalty: -2, frequency_penalty: 2, logprobs: true, top_logprobs: 20 })],
    [
      CHAT,
      chat({
        messages: [
          { role: 'developer', content: [{ type: 'text', text: 'be brief' }] },
          { role: 'system', content: 'sys', name: 'boss' },
          { role: 'user', content: [{ type: 'text', text: 'what is this?' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }, { type: 'video_url', video_url: { url: 'x' } }] },
          { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'look', arguments: '{"q":1}' } }] },
          { role: 'tool', tool_call_id: 'call_1', content: 'a cat' },
          { role: 'assistant', content: 'A cat.', refusal: null },
        ],
        tools: [{ type: 'function', function: { name: 'look', description: 'looks', parameters: { type: 'object', properties: { q: { type: 'integer' } } }, strict: true } }],
        tool_choice: { type: 'function', function: { name: 'look' } },
        response_format: { type: 'json_schema', json_schema: { name: 'out', schema: { type: 'object' }, strict: true } },
      }),
    ],
    [COMPLETIONS, { model: 'm', prompt: 'once upon' }],
    [COMPLETIONS, { model: 'm', prompt: ['a', 'b'], max_tokens: 5, echo: true, logprobs: 3, suffix: null }],
    [COMPLETIONS, { model: 'm', prompt: [1, 2, 3] }],
    [COMPLETIONS, { model: 'm', prompt: [[1, 2], [3]] }],
    [EMBEDDINGS, { model: 'm', input: 'text', encoding_format: 'float', dimensions: 256 }],
    [EMBEDDINGS, { model: 'm', input: [[1, 2], [3]] }],
  ];
  for (const [path, body] of ok) assert.is(validateRequest(path, body), null, `${path} ${JSON.stringify(body)}`);
});

test('extension fields pass untouched, whatever they hold, and the body is never changed', () => {
  const extensions = {
    top_k: 'anything',
    min_p: { odd: [1, 2] },
    guided_json: { type: 'object', properties: { constructor: { type: 'string' }, prototype: { type: 'number' } } },
    priority: -5,
    chat_template_kwargs: { enable_thinking: false },
    add_generation_prompt: 3,
  };
  const body = chat({ ...extensions, stream: true });
  const before = JSON.stringify(body);
  assert.is(validateRequest(CHAT, body), null);
  assert.is(JSON.stringify(body), before);
  // No defaults were filled in either.
  assert.not.ok('n' in body);
  assert.is(validateRequest(COMPLETIONS, { model: 'm', prompt: 'x', ...extensions }), null);
});

test('prototype keys: __proto__ is refused anywhere, constructor and prototype in standard objects', () => {
  refused(CHAT, parsed('{"model":"m","messages":[{"role":"user","content":"x"}],"guided_json":{"a":{"__proto__":{"polluted":1}}}}'), 'guided_json.a.__proto__');
  refused(CHAT, parsed('{"__proto__":{"polluted":1},"model":"m","messages":[{"role":"user","content":"x"}]}'), '__proto__');
  refused(CHAT, parsed('{"model":"m","messages":[{"role":"user","content":"x","constructor":{"prototype":{"polluted":1}}}]}'), 'messages[0].constructor');
  refused(CHAT, parsed('{"model":"m","prototype":1,"messages":[{"role":"user","content":"x"}]}'), 'prototype');
  assert.is(({} as Record<string, unknown>)['polluted'], undefined);
});

test('nesting past the bound is a fault at its top-level field, however deep', () => {
  for (const depth of [MAX_DEPTH + 1, 100_000]) {
    const raw = `{"model":"m","messages":[{"role":"user","content":"x"}],"guided_json":${'['.repeat(depth)}${']'.repeat(depth)}}`;
    const p = parseRequestBody(Buffer.from(raw), 'application/json');
    assert.ok('body' in p);
    assert.match(refused(CHAT, p.body, 'guided_json').message, `more than ${MAX_DEPTH} levels`);
  }
  const fine = `{"model":"m","messages":[{"role":"user","content":"x"}],"guided_json":${'['.repeat(MAX_DEPTH - 2)}${']'.repeat(MAX_DEPTH - 2)}}`;
  assert.is(validateRequest(CHAT, parsed(fine)), null);
});

test('strings with an unpaired surrogate are refused; paired ones are fine', () => {
  refused(CHAT, parsed('{"model":"m","messages":[{"role":"user","content":"a\\ud800b"}]}'), 'messages[0].content');
  refused(CHAT, parsed('{"model":"m","messages":[{"role":"user","content":"x"}],"ext":{"\\udc00":1}}'), 'ext');
  assert.is(validateRequest(CHAT, parsed('{"model":"m","messages":[{"role":"user","content":"\\ud83d\\ude00 ok"}]}')), null);
});

test('the body must be UTF-8 JSON holding an object; every other body says what it is', () => {
  const fault = (raw: Buffer | string, type = 'application/json'): string => {
    const p = parseRequestBody(typeof raw === 'string' ? Buffer.from(raw) : raw, type);
    assert.ok('message' in p, `expected ${String(raw)} to be refused`);
    assert.is(p.param, null);
    return p.message;
  };
  assert.match(fault(''), 'empty');
  assert.match(fault('null'), 'not null');
  assert.match(fault('[1]'), 'not an array');
  assert.match(fault('3'), 'not a number');
  assert.match(fault('"s"'), 'not a string');
  assert.match(fault('{"model":'), 'not valid JSON');
  assert.match(fault(Buffer.from([0x7b, 0xff, 0xfe, 0x7d])), 'not valid UTF-8');
  assert.match(fault('model=m', 'application/x-www-form-urlencoded'), 'send Content-Type: application/json');
  // curl's default content type with a JSON body is read as JSON.
  const ok = parseRequestBody(Buffer.from('{"model":"m"}'), 'application/x-www-form-urlencoded');
  assert.equal(ok, { body: { model: 'm' } });
});

test('max_tokens past the largest context of the ready endpoints is refused, naming the field sent', () => {
  assert.is(maxTokensFault({ max_tokens: 4096 }, 4097), null);
  assert.is(maxTokensFault({ max_tokens: 4096 }, null), null);
  assert.is(maxTokensFault({}, 10), null);
  const f = maxTokensFault({ max_tokens: 5000 }, 4096);
  assert.is(f?.param, 'max_tokens');
  assert.match(f!.message, '4096');
  assert.is(maxTokensFault({ max_tokens: 10, max_completion_tokens: 4096 }, 4096)?.param, 'max_completion_tokens');
});

test("what the official openai client sends for each path passes", async () => {
  const sent: { path: string; body: Record<string, unknown> }[] = [];
  const reply = (path: string): unknown =>
    path.endsWith('/embeddings')
      ? { object: 'list', data: [], model: 'm', usage: { prompt_tokens: 0, total_tokens: 0 } }
      : { id: 'x', object: path.endsWith('/chat/completions') ? 'chat.completion' : 'text_completion', created: 0, model: 'm', choices: [] };
  const client = new OpenAI({
    baseURL: 'http://127.0.0.1:9/v1',
    apiKey: 'unused',
    maxRetries: 0,
    fetch: async (url, init) => {
      const path = new URL(String(url)).pathname;
      sent.push({ path, body: JSON.parse(String(init?.body)) as Record<string, unknown> });
      return new Response(JSON.stringify(reply(path)), { headers: { 'content-type': 'application/json' } });
    },
  });
  await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'Hello!' }] });
  await client.chat.completions.create({
    model: 'm',
    messages: [
      { role: 'system', content: 'be brief' },
      { role: 'user', content: [{ type: 'text', text: 'and this?' }, { type: 'image_url', image_url: { url: 'https://x/y.png', detail: 'low' } }] },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: 'done' },
    ],
    max_completion_tokens: 64,
    temperature: 0.2,
    stop: ['\n\n'],
    tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: {} } } }],
    tool_choice: 'auto',
    response_format: { type: 'json_object' },
    seed: 7,
    user: 'u1',
  });
  await client.completions.create({ model: 'm', prompt: ['a', 'b'], max_tokens: 4, logprobs: 2, echo: false });
  await client.embeddings.create({ model: 'm', input: ['one', 'two'], encoding_format: 'float' });
  assert.is(sent.length, 4);
  for (const { path, body } of sent) assert.is(validateRequest(path.slice(path.indexOf('/v1/')), body), null, `${path} ${JSON.stringify(body)}`);
});

test.run();
