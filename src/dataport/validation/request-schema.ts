// The OpenAI request bodies the data port accepts, as JSON Schema. Only the standard
// fields are typed; every other key passes through untouched, because vLLM and SGLang
// read many of their own (`top_k`, `min_p`, `guided_json`, `priority`,
// `chat_template_kwargs`, …). Optional fields accept null as the OpenAI API does.
// `expected` is an annotation read back when a value fails: it becomes the message.

/** Most tokens a request may ask for, whatever the model; the model's own limit is checked against its engines. */
const MAX_TOKENS_BOUND = 16_777_216;
/** Choices per prompt, as the OpenAI API bounds it. */
const MAX_N = 128;
/** Largest token id accepted in a prompt or a logit_bias key: int32, as engines store them. */
const MAX_TOKEN_ID = 2_147_483_647;

/**
 * Keys refused in every object the schema types: in a standard field they mean nothing,
 * and they are what turns a careless merge into prototype pollution. (`__proto__` is
 * refused anywhere in a body, see request-shape.ts.)
 */
const PROTOTYPE_KEYS = ['__proto__', 'constructor', 'prototype'];

type Schema = Record<string, unknown>;

const obj = (properties: Record<string, Schema>, required: string[] = [], expected = 'an object'): Schema => ({
  type: 'object',
  expected,
  required,
  propertyNames: { not: { enum: PROTOTYPE_KEYS } },
  properties,
});
const nullable = (type: string): string[] => [type, 'null'];
const bool: Schema = { type: nullable('boolean'), expected: 'true or false' };
const str: Schema = { type: nullable('string'), expected: 'a string' };
const reqStr: Schema = { type: 'string', expected: 'a string' };
const num = (min: number, max: number): Schema => ({ type: nullable('number'), minimum: min, maximum: max, expected: `a number from ${min} to ${max}` });
const int = (min: number, max: number): Schema => ({ type: nullable('integer'), minimum: min, maximum: max, expected: `an integer from ${min} to ${max}` });
const orNull = (s: Schema): Schema => ({ ...s, type: nullable('object') });
const anyOf = (expected: string, ...branches: Schema[]): Schema => ({ expected, anyOf: branches });

const tokenId: Schema = { type: 'integer', minimum: 0, maximum: MAX_TOKEN_ID, expected: `a token id (an integer from 0 to ${MAX_TOKEN_ID})` };
const nonEmptyString: Schema = { type: 'string', minLength: 1, expected: 'a non-empty string' };
const tokenIds: Schema = { type: 'array', minItems: 1, items: tokenId, expected: 'a non-empty array of token ids' };

/** string | string[] | number[] | number[][], each non-empty: prompt and input. */
const textOrTokens = anyOf(
  'a non-empty string, an array of non-empty strings, an array of token ids or an array of arrays of token ids',
  nonEmptyString,
  { type: 'array', minItems: 1, items: nonEmptyString },
  tokenIds,
  { type: 'array', minItems: 1, items: tokenIds },
);

// OpenAI's bounds of 4 stop strings and a temperature of 2 are its own: vLLM and SGLang
// take any number of stop strings and any temperature from 0 (min_p sampling runs hot),
// and clients written for them (evaluation harnesses) send both.
const stop = anyOf('a string or an array of strings', { type: nullable('string') }, { type: 'array', items: { type: 'string' } });

const textPart = obj({ type: { const: 'text' }, text: reqStr }, ['type', 'text'], 'a text part');
/** Parts other than text (images, audio, files, video) carry engine-specific payloads: only their `type` is typed. */
const contentPart = {
  ...obj({ type: { type: 'string', expected: 'a string naming the part type' }, text: reqStr }, ['type'], "a content part (an object with a 'type')"),
  if: { properties: { type: { const: 'text' } } },
  then: { required: ['text'] },
};
const content = (required: boolean, parts: Schema): Schema =>
  anyOf(
    `a string or an array of content parts${required ? '' : ', or null'}`,
    { type: required ? 'string' : nullable('string') },
    { type: 'array', items: parts },
  );

const toolCall = obj(
  {
    id: reqStr,
    type: { const: 'function', expected: "'function'" },
    function: obj({ name: reqStr, arguments: reqStr }, ['name', 'arguments'], 'an object with name and arguments (a JSON string)'),
  },
  ['id', 'type', 'function'],
  'a tool call: {id, type: "function", function: {name, arguments}}',
);

const roleOf = (role: string): Schema => ({ const: role });
const message = {
  type: 'object',
  expected: "a message (an object with a 'role')",
  required: ['role'],
  propertyNames: { not: { enum: PROTOTYPE_KEYS } },
  discriminator: { propertyName: 'role' },
  oneOf: [
    obj({ role: roleOf('system'), content: content(true, textPart), name: str }, ['role', 'content']),
    obj({ role: roleOf('developer'), content: content(true, textPart), name: str }, ['role', 'content']),
    obj({ role: roleOf('user'), content: content(true, contentPart), name: str }, ['role', 'content']),
    obj({
      role: roleOf('assistant'),
      content: content(false, contentPart),
      name: str,
      refusal: str,
      tool_calls: { type: nullable('array'), items: toolCall, expected: 'an array of tool calls' },
    }, ['role']),
    obj({ role: roleOf('tool'), content: content(true, textPart), tool_call_id: reqStr }, ['role', 'content', 'tool_call_id']),
    obj({ role: roleOf('function'), content: { type: nullable('string'), expected: 'a string or null' }, name: reqStr }, ['role', 'name']),
  ],
};

const tool = obj(
  {
    type: { const: 'function', expected: "'function'" },
    function: obj(
      {
        name: { type: 'string', pattern: '^[a-zA-Z0-9_.-]{1,64}$', expected: 'a name of 1 to 64 letters, digits, _ . or -' },
        description: str,
        // A JSON Schema of the tool's arguments: free-form by nature.
        parameters: { type: nullable('object'), expected: 'a JSON Schema object' },
        strict: bool,
      },
      ['name'],
    ),
  },
  ['type', 'function'],
  'a tool: {type: "function", function: {name, description?, parameters?}}',
);

const toolChoice = anyOf(
  "'none', 'auto', 'required' or {type: \"function\", function: {name}}",
  { enum: ['none', 'auto', 'required', null] },
  obj({ type: { const: 'function' }, function: obj({ name: reqStr }, ['name']) }, ['type', 'function']),
);

const responseFormat = {
  ...orNull(obj({ type: { enum: ['text', 'json_object', 'json_schema', 'structural_tag'], expected: "'text', 'json_object', 'json_schema' or 'structural_tag' (vLLM, SGLang)" }, json_schema: obj({ name: reqStr, schema: { type: 'object' }, strict: bool }, ['name']) }, ['type'])),
  if: { properties: { type: { const: 'json_schema' } }, required: ['type'] },
  then: { required: ['json_schema'] },
};

const logitBias: Schema = {
  type: nullable('object'),
  expected: 'an object mapping token ids to biases from -100 to 100',
  propertyNames: { pattern: '^(0|[1-9][0-9]{0,9})$' },
  additionalProperties: { type: 'number', minimum: -100, maximum: 100, expected: 'a number from -100 to 100' },
};

/** Sampling fields shared by chat and completions. */
const sampling = {
  model: nonEmptyString,
  max_tokens: int(1, MAX_TOKENS_BOUND),
  temperature: { type: nullable('number'), minimum: 0, expected: 'a number of at least 0' },
  top_p: num(0, 1),
  n: int(1, MAX_N),
  stop,
  stream: bool,
  stream_options: orNull(obj({ include_usage: bool }, [], 'an object such as {"include_usage": true}')),
  presence_penalty: num(-2, 2),
  frequency_penalty: num(-2, 2),
  seed: int(-Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER),
  logit_bias: logitBias,
  user: str,
};

export const chatCompletionSchema = obj(
  {
    ...sampling,
    messages: { type: 'array', minItems: 1, items: message, expected: 'a non-empty array of messages' },
    max_completion_tokens: int(1, MAX_TOKENS_BOUND),
    logprobs: bool,
    top_logprobs: int(0, 20),
    response_format: responseFormat,
    tools: { type: nullable('array'), maxItems: 128, items: tool, expected: 'an array of at most 128 tools' },
    tool_choice: toolChoice,
    parallel_tool_calls: bool,
    store: bool,
    reasoning_effort: str,
    metadata: { type: nullable('object'), additionalProperties: { type: 'string' }, expected: 'an object of strings' },
  },
  ['model', 'messages'],
  'a JSON object',
);

export const completionSchema = obj(
  {
    ...sampling,
    prompt: textOrTokens,
    logprobs: int(0, 20),
    echo: bool,
    suffix: str,
    best_of: int(1, 20),
  },
  ['model', 'prompt'],
  'a JSON object',
);

export const embeddingSchema = obj(
  {
    model: nonEmptyString,
    input: textOrTokens,
    encoding_format: { enum: ['float', 'base64', null], expected: "'float' or 'base64'" },
    dimensions: int(1, 65_536),
    user: str,
  },
  ['model', 'input'],
  'a JSON object',
);
