// The JSON Schema of llmgw.yaml. This object is the source of truth: the loader compiles
// it with ajv, and `schema/llmgw.schema.json` is a byte-for-byte copy for editors
// (`# yaml-language-server: $schema=...`), kept in sync by spec/config/schema.spec.ts.
// Every property carries a `description`, because that is what an editor shows on hover.
//
// Key names are snake_case and come from the Go prototype, so operators can move a file
// over unchanged.

/** The subset of JSON Schema (draft-07) this file uses. */
export interface SchemaNode {
  $schema?: string;
  title?: string;
  description: string;
  type: 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';
  properties?: Record<string, SchemaNode>;
  required?: string[];
  /** `false`, or the schema of every value of a map keyed by free names (the agent's `fabrics`). */
  additionalProperties?: false | SchemaNode;
  items?: SchemaNode;
  minItems?: number;
  minLength?: number;
  pattern?: string;
  enum?: string[];
  minimum?: number;
  exclusiveMinimum?: number;
  maximum?: number;
  default?: unknown;
  examples?: unknown[];
}

/** `HOST:PORT`, `[v6]:PORT` or `:PORT`; the same grammar as net/host-port.ts. */
export const HOST_PORT_PATTERN = '^(?:\\[[^\\]]+\\]|[^:\\[\\]]*):[0-9]{1,5}$';
/** An http or https URL with a host. `new URL()` checks the rest after the schema. */
export const HTTP_URL_PATTERN = '^https?://[^/\\s?#]+';
/** setTimeout fires at once for delays above 2^31-1 ms (~24.8 days), so no duration may exceed it. */
export const MAX_TIMER_MS = 2_147_483_647;

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const;
export const ENGINE_KINDS = ['vllm', 'sglang'] as const;

export function object(description: string, properties: Record<string, SchemaNode>, extra: Partial<SchemaNode> = {}): SchemaNode {
  return { type: 'object', description, additionalProperties: false, properties, ...extra };
}

export function list(description: string, items: SchemaNode, extra: Partial<SchemaNode> = {}): SchemaNode {
  return { type: 'array', description, items, ...extra };
}

export function str(description: string, extra: Partial<SchemaNode> = {}): SchemaNode {
  return { type: 'string', description, ...extra };
}

export function int(description: string, minimum: number, extra: Partial<SchemaNode> = {}): SchemaNode {
  return { type: 'integer', description, minimum, ...extra };
}

export function ms(description: string, defaultMs: number): SchemaNode {
  return int(description, 1, { maximum: MAX_TIMER_MS, default: defaultMs });
}

const name = (what: string): SchemaNode => str(what, { minLength: 1 });

const profile = object(
  'A capacity profile: one way to run the model on one GPU class. The control plane places replicas from these.',
  {
    name: name('Name of the profile, unique within the model, e.g. h100-tp1.'),
    engine: str('Inference engine that runs the model.', { enum: [...ENGINE_KINDS], default: 'vllm' }),
    gpu_class: name('GPU class the profile runs on, e.g. h100-80g. A tensor-parallel group never mixes classes.'),
    tp: int('Tensor-parallel size: GPUs per pipeline stage.', 1),
    pp: int('Pipeline-parallel size: number of pipeline stages.', 1, { default: 1 }),
    nodes: int('Nodes one replica spans. Above 1 the replica is multi-node and stays within one fabric.', 1, { default: 1 }),
    replicas: int('How many replicas of this profile the control plane keeps running.', 0, { default: 1 }),
  },
  { required: ['name', 'gpu_class', 'tp'] },
);

const model = object(
  'A model clients can ask for by name. It must be servable: it needs profiles, or an endpoint or simulate entry that names it.',
  {
    name: name('The model name clients send in `model`, and the name the engines serve. Unique across all names and aliases.'),
    aliases: list('Other names clients may use for this model. Unique across all names and aliases.', name('An alias.'), {
      default: [],
    }),
    fallbacks: list(
      'Models (names or aliases) tried in order when this one has no usable endpoint. Checked at load, so a typo fails at start rather than during an outage.',
      name('A model name or alias from this catalog.'),
      { default: [] },
    ),
    routing_profile: name('How the router scores endpoints for this model, e.g. chat or batch. Unset: the router default.'),
    max_model_len: int('Longest prompt plus completion in tokens. Longer requests are refused before they reach an engine.', 1),
    profiles: list('Capacity profiles for placement by the control plane.', profile, { default: [] }),
  },
  { required: ['name'] },
);

const endpoint = object(
  'A static engine (router-only mode): an OpenAI-compatible vLLM or SGLang server at a fixed URL.',
  {
    id: name('Unique id of the endpoint; it labels metrics and logs.'),
    url: str('Base URL of the engine, e.g. http://10.0.0.5:8000.', { pattern: HTTP_URL_PATTERN, examples: ['http://10.0.0.5:8000'] }),
    models: list('Model names (not aliases) this engine serves; each must be in `models`.', name('A model name.'), { minItems: 1 }),
    pool: name('Pool the endpoint belongs to, e.g. ib-a/h100-80g.'),
    weight: { type: 'number', description: 'Relative capacity of the endpoint; measure it rather than guess.', exclusiveMinimum: 0, default: 1 },
    priority: { type: 'integer', description: 'Higher priorities are tried first.', default: 0 },
  },
  { required: ['id', 'url', 'models'] },
);

const simulate = object(
  'Simulated engines the server starts in-process, so llmgw runs without GPUs.',
  {
    model: name('The model the simulated engines serve; must be a name in `models`.'),
    replicas: int('How many simulated engines to start.', 1, { default: 1 }),
    speed: { type: 'number', description: 'Time factor: 10 runs ten times faster than a real GPU would.', exclusiveMinimum: 0, default: 1 },
    flavor: str('Which engine the simulation imitates (API details and metric names).', { enum: [...ENGINE_KINDS], default: 'vllm' }),
    seed: int('Seed for deterministic output.', 0, { default: 0 }),
    max_num_seqs: int('Most sequences in one batch. Unset: the simulated engine default.', 1),
    num_gpu_blocks: int('KV cache size in blocks of 16 tokens. Unset: the simulated engine default.', 1),
  },
  { required: ['model'] },
);

const schema: SchemaNode = object(
  'llmgw server configuration. Every scalar key can be overridden by an LLMGW_* environment variable, nested keys joined by a double underscore (LLMGW_ROUTER__MAX_BODY_BYTES).',
  {
    listen: str('HOST:PORT of the data port (the OpenAI API). Port 0 picks a free port.', {
      pattern: HOST_PORT_PATTERN,
      default: '127.0.0.1:4000',
    }),
    admin_listen: str('HOST:PORT of the admin port (metrics, management API). Do not expose it publicly.', {
      pattern: HOST_PORT_PATTERN,
      default: '127.0.0.1:4001',
    }),
    admin_token: name('When set, the admin API requires `Authorization: Bearer <admin_token>`.'),
    log_level: str('Least severe log level written.', { enum: [...LOG_LEVELS], default: 'info' }),
    runtime: object(
      'The actor runtime.',
      {
        ask_timeout_ms: ms('How long an ask to an actor waits for its reply, in ms.', 5_000),
        shutdown_timeout_ms: ms('How long a graceful shutdown waits for in-flight work, in ms.', 10_000),
      },
      { default: {} },
    ),
    router: object(
      'The router: admission, scheduling and the streaming proxy.',
      {
        max_body_bytes: int('Largest request body accepted on the data port, in bytes (default 4 MiB).', 1, { default: 4_194_304 }),
        connect_timeout_ms: ms('How long to wait for a connection to an engine, in ms.', 2_000),
        first_token_timeout_ms: ms('How long to wait for an engine to send its first token, in ms.', 60_000),
        idle_timeout_ms: ms('How long a stream may stay silent between tokens, in ms.', 30_000),
        poll_interval_ms: ms('How often each engine is polled for load and health, in ms.', 1_000),
        stale_after_ms: ms("How old an engine's last poll may be before it is not routed to, in ms.", 5_000),
      },
      { default: {} },
    ),
    models: list('The model catalog.', model, { default: [] }),
    endpoints: list('Static engines (router-only mode).', endpoint, { default: [] }),
    simulate: list('Simulated engines started in-process.', simulate, { default: [] }),
  },
  { $schema: 'http://json-schema.org/draft-07/schema#', title: 'llmgw.yaml' },
);

// `$schema` and `title` first, as editors and readers expect.
const { $schema, title, ...rest } = schema;

function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null && !Object.isFrozen(v)) {
    for (const k of Object.keys(v)) deepFreeze((v as Record<string, unknown>)[k]);
    Object.freeze(v);
  }
  return v;
}

/** The JSON Schema of llmgw.yaml (frozen). */
export const configSchema: Readonly<SchemaNode> = deepFreeze({ $schema, title, ...rest } as SchemaNode);

/** The exact text of schema/llmgw.schema.json. */
export function configSchemaJson(): string {
  return JSON.stringify(configSchema, null, 2) + '\n';
}
