// The JSON Schema of llmgw.yaml. This object is the source of truth: the loader compiles
// it with ajv, and `schema/llmgw.schema.json` is a byte-for-byte copy for editors
// (`# yaml-language-server: $schema=...`), kept in sync by spec/config/schema.spec.ts.
// Every property carries a `description`, because that is what an editor shows on hover.
//
// Key names are snake_case and come from the Go prototype, so operators can move a file
// over unchanged.

import { VLLM_LAUNCH_MODES } from '../messages/shard-spec.js';
import { MAX_SIM_GPUS } from '../sim/nvidia-smi.js';

/** The subset of JSON Schema (draft-07) this file uses. */
export interface SchemaNode {
  $schema?: string;
  title?: string;
  description: string;
  /** Absent only on a node that is one of several shapes (`oneOf`). */
  type?: 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';
  /** The shapes a value may take, exactly one of which it must match. */
  oneOf?: SchemaNode[];
  properties?: Record<string, SchemaNode>;
  required?: string[];
  /** `false`, or the schema of every value of a map keyed by free names (the agent's `fabrics`). */
  additionalProperties?: false | SchemaNode;
  /** A map's keys: every key must match `pattern`. */
  propertyNames?: { readonly type: 'string'; readonly pattern: string };
  items?: SchemaNode;
  minItems?: number;
  maxItems?: number;
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

/** A POSIX environment variable name: what a shell can set and `env` prints. */
export const ENV_NAME_PATTERN = '^[A-Za-z_][A-Za-z0-9_]*$';

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const;
export const ENGINE_KINDS = ['vllm', 'sglang'] as const;

export function object(description: string, properties: Record<string, SchemaNode>, extra: Partial<SchemaNode> = {}): SchemaNode {
  return { type: 'object', description, additionalProperties: false, properties, ...extra };
}

export function list(description: string, items: SchemaNode, extra: Partial<SchemaNode> = {}): SchemaNode {
  return { type: 'array', description, items, ...extra };
}

/** A mapping of free names (e.g. environment variables) to values of one schema. */
export function map(description: string, values: SchemaNode, keyPattern: string, extra: Partial<SchemaNode> = {}): SchemaNode {
  return { type: 'object', description, additionalProperties: values, propertyNames: { type: 'string', pattern: keyPattern }, ...extra };
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
const price = (what: string): SchemaNode => ({ type: 'number', description: what, minimum: 0 });

/** The named ways a model's requests are priced; a price per million tokens is the third. */
export const UNIT_KINDS = ['tokens', 'gpu_seconds'] as const;

/** GPUs, nodes and parallel sizes stay far below this, so their products are exact integers. */
const MAX_PARALLEL = 1_024;

const profile = object(
  'A capacity profile: one way to run the model on one GPU class. The control plane places replicas from these, highest priority first.',
  {
    name: name('Name of the profile, unique within the model, e.g. h100-tp1.'),
    engine: str('Inference engine that runs the model.', { enum: [...ENGINE_KINDS], default: 'vllm' }),
    gpu_class: name('GPU class the profile runs on, e.g. h100-80g. A tensor-parallel group never mixes classes.'),
    tp: int('Tensor-parallel size: GPUs per pipeline stage.', 1, { maximum: MAX_PARALLEL }),
    pp: int('Pipeline-parallel size: number of pipeline stages.', 1, { maximum: MAX_PARALLEL, default: 1 }),
    nodes: int('Nodes one replica spans. Above 1 the replica is multi-node and stays within one fabric.', 1, { maximum: MAX_PARALLEL, default: 1 }),
    gpus_per_node: int('GPUs one replica uses on each of its nodes. Unset: tp × pp / nodes. gpus_per_node × nodes must equal tp × pp.', 1, { maximum: MAX_PARALLEL }),
    launch_mode: str(
      "How a multi-node vLLM replica is wired: ray (a Ray cluster, its head on rank 0) or mp (vLLM's own launcher, vLLM 0.11 and later). Which works depends on the vLLM version, so a multi-node vLLM profile must name one; SGLang launches its ranks itself and refuses it.",
      { enum: [...VLLM_LAUNCH_MODES] },
    ),
    args: list(
      'Extra engine arguments, passed after the ones llmgw sets, e.g. [--max-num-seqs, "128"]. For vLLM, a --max-num-seqs or --max-num-batched-tokens left unset here is passed at the value vLLM itself would pick for the GPUs placed on (1024 and 8192 from 70 GiB up except on an A100, else 256 and 2048), so the router knows the batch size and step budget from the first request instead of learning them under load.',
      str('One argument.'),
      { default: [] },
    ),
    env: map("Environment variables laid over the engine's generated environment.", str('The value (quote numbers: "1").'), ENV_NAME_PATTERN, { default: {} }),
    priority: { type: 'integer', description: 'Placement takes the highest-priority profile that fits; equal priorities keep file order.', default: 0 },
    weight: {
      type: 'number',
      description: "The router's weight for replicas of this profile, relative to other endpoints of the model; measure it rather than guess.",
      exclusiveMinimum: 0,
      default: 1,
    },
    startup_timeout_ms: ms(
      'How long a replica may take from placement to ready before it is failed and rebuilt, in ms. Model loading dominates it: a 70B model over two nodes takes tens of minutes.',
      1_200_000,
    ),
  },
  { required: ['name', 'gpu_class', 'tp'] },
);

/** Keys a schema node no longer has, with what replaced them: a config still using one is told where to go. */
export const RETIRED_KEYS: ReadonlyMap<SchemaNode, Readonly<Record<string, string>>> = new Map([
  [
    profile,
    {
      replicas: "a profile no longer sets a replica count: the model's scaling: {min, max} says how many replicas to keep",
      startup_timeout: 'durations carry their unit here: set startup_timeout_ms, in ms',
    },
  ],
]);

const weightOf = (what: string): SchemaNode => ({ type: 'number', description: what, minimum: 0, default: 0 });

const routingProfile = object(
  'A routing profile: how much each scorer counts when the router picks an endpoint. A scorer left out counts 0; the router in-flight scorer is always on.',
  {
    name: name('Name of the profile, e.g. chat; models select it with routing_profile, requests with x-llmgw-profile.'),
    scorers: object(
      'Weight of each scorer; each scores an endpoint from 0 to 1.',
      {
        queue: weightOf("The engine's waiting queue (scraped), shorter is better."),
        kv: weightOf("The engine's KV-cache usage (scraped), lower is better."),
        inflight: weightOf("Requests the router has in flight to the endpoint, fewer is better. Never stale. At least 0.1 is used."),
        prefix: weightOf('Prefix affinity: the blocks of the prompt the endpoint would prefill beyond the best endpoint; none scores 1, k more 1/(k+1).'),
        session: weightOf('Session affinity: the same x-llmgw-session header or `user` field goes to the same endpoint.'),
        weight: weightOf("The endpoint's configured weight relative to the largest."),
      },
      { default: {} },
    ),
    band: name('Admission band of requests routed with this profile (e.g. bronze for batch), unless their API key sets one.'),
  },
  { required: ['name'] },
);

const band = object(
  'A priority band of admission control.',
  {
    name: name('Name of the band, e.g. platinum.'),
    queue_limit: int('Most requests of this band waiting for admission per model; more are refused with 429.', 0, { default: 1_000 }),
    queue_timeout_ms: ms('Longest a request of this band waits for admission before a 503, in ms.', 30_000),
  },
  { required: ['name'] },
);

/** The bands a config gets when it names none. */
export const DEFAULT_BAND_NAMES = ['platinum', 'gold', 'silver', 'bronze'] as const;

const DEFAULT_BANDS = [
  { name: 'platinum', queue_limit: 1_000, queue_timeout_ms: 30_000 },
  { name: 'gold', queue_limit: 1_000, queue_timeout_ms: 30_000 },
  { name: 'silver', queue_limit: 1_000, queue_timeout_ms: 60_000 },
  { name: 'bronze', queue_limit: 10_000, queue_timeout_ms: 300_000 },
];

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
    stream_from_engine: {
      type: 'boolean',
      description:
        "Whether a chat or completions answer a client asks for whole is streamed from the engine and sent whole once collected, so that the first-token timeout times the first token rather than the whole generation, a stall mid-way is seen and a failure mid-way is retried. Off for an engine whose streamed answer differs from its whole one (a reasoning or tool parser that streams differently): answers are then asked for as the client asked.",
      default: true,
    },
    source: name('What the engines load: a path on the nodes or a Hugging Face id, e.g. meta-llama/Llama-3.1-8B-Instruct. Unset: the model name.'),
    scaling: object(
      'How many replicas of the model the control plane keeps placed.',
      {
        min: int('Fewest replicas. Unset: 1 for a model with profiles, else 0.', 0),
        max: int('Most replicas. Unset: min, and at least 1.', 0),
      },
      { default: {} },
    ),
    profiles: list('Capacity profiles for placement by the control plane. A model with profiles needs agent_tls or agent_insecure.', profile, { default: [] }),
    units: {
      description:
        "What a request to this model costs in budget units, with tenancy on: tokens (one unit per prompt or completion token), gpu_seconds (the serving endpoint's GPUs × the request's duration ÷ the requests it served at once) or a price per million tokens of each kind.",
      oneOf: [
        str('tokens or gpu_seconds', { enum: [...UNIT_KINDS] }),
        object(
          '{ per_million: { prompt, completion, cached } }',
          {
            per_million: object(
              'Units per million tokens of each kind.',
              {
                prompt: price('Units per million prompt tokens not served from the cache.'),
                completion: price('Units per million completion tokens.'),
                cached: price('Units per million prompt tokens the engine served from its prefix cache.'),
              },
              { required: ['prompt', 'completion', 'cached'] },
            ),
          },
          { required: ['per_million'] },
        ),
      ],
      default: 'tokens',
    },
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
    priority: {
      type: 'integer',
      description: 'Higher priorities are tried first: an endpoint receives traffic only while no usable endpoint of a higher priority serves the model.',
      default: 0,
    },
    gpus: int('GPUs the engine runs on: what a request to a model priced in gpu_seconds is charged for.', 1, { maximum: MAX_PARALLEL, default: 1 }),
    max_num_seqs: int("The engine's batch size (its --max-num-seqs). Set, admission counts free slots from it from the first request on; unset, it is learnt from the engine's queue.", 1),
    max_num_batched_tokens: int(
      "The engine's per-step token budget with chunked prefill (its --max-num-batched-tokens); 0: none, chunked prefill is off and every admitted prompt is prefilled in one step. Under half router.admission.prefill_tokens_per_replica, admission paces the lower bands' prompts to this engine at twice this (a step's prefill under way and the next one's waiting ahead of an interactive request); otherwise, unset or 0, at prefill_tokens_per_replica.",
      0,
    ),
    priority_scheduling: str(
      "Set when the engine orders its queue by the request's `priority` field: llmgw then sends the admission band in it. vLLM with --scheduling-policy priority serves lower values first; SGLang with --enable-priority-scheduling serves lower first only with --schedule-low-priority-values-first.",
      { enum: ['lower-first', 'higher-first'] },
    ),
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

/** A host name as hostname(1) prints it: what an agent's node_id must be. */
export const NODE_NAME_PATTERN = '^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$';

/** Each simulated node's engines bind their own loopback address, 127.0.0.2 and up. */
export const MAX_SIMULATED_NODES = 64;

const simulateNode = object(
  'A simulated GPU node: the server starts a real agent for it in-process, with a simulated nvidia-smi and the sim engine as its vllm, so the control plane places replicas without GPUs.',
  {
    name: str("The node's id in the fleet (a host name); its state lives in .llmgw-state/sim-nodes/<name> under the working directory.", { pattern: NODE_NAME_PATTERN }),
    gpus: int('How many GPUs it has, all H100 80GB HBM3 (class h100-80g) in one NVLink domain.', 1, { maximum: MAX_SIM_GPUS, default: 4 }),
  },
  { required: ['name'] },
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
    agent_listen: str(
      'HOST:PORT of the agent port: every node agent dials it and keeps one stream open. Loopback by default, so a server never listens for agents by accident; set an address the nodes reach.',
      { pattern: HOST_PORT_PATTERN, default: '127.0.0.1:4002' },
    ),
    agent_tls: object(
      "Mutual TLS on the agent port: the server presents cert and key, and accepts an agent only with a certificate signed by ca and naming its node id. PEM file paths (relative ones from the server's working directory), checked at load.",
      {
        ca: name('The CA that signs every agent certificate (PEM file).'),
        cert: name("The server's certificate (PEM file)."),
        key: name("The server's private key (PEM file)."),
      },
      { required: ['ca', 'cert', 'key'] },
    ),
    agent_insecure: {
      type: 'boolean',
      description: 'Serve the agent port as plaintext HTTP/2 without client certificates, on a trusted network only. Exclusive with agent_tls; one of the two is required once a model has profiles.',
      default: false,
    },
    control: object(
      'The control plane: it places replicas of models with profiles on the nodes whose agents report to the agent port.',
      {
        interval_ms: ms('How often the control plane compares the replicas it wants with what the agents report, in ms.', 1_000),
        unreachable_after_ms: ms('A node whose agent is silent this long is unreachable: nothing new goes there, its replicas keep serving, in ms.', 15_000),
        lost_after_ms: ms(
          'A node whose agent is silent this long is lost and its replicas are rebuilt elsewhere, in ms. Must exceed unreachable_after_ms, far enough that a blip tears nothing down.',
          60_000,
        ),
        port_range: list(
          "Inclusive [lo, hi] range every node's engine ports come from (HTTP, rendezvous). Keep it clear of Ray's worker ports (10002-19999) and of ports engines open at fixed numbers (a Ray head's 8265 and 10001).",
          int('A port number.', 1_024, { maximum: 65_535 }),
          { minItems: 2, maxItems: 2, default: [20_000, 20_999] },
        ),
        drain_grace_ms: ms(
          'Bounds a drain or a scale-down, in ms: how long a leaving replica keeps serving while its replacement comes up (then it is drained anyway), and about how long its requests in flight may take to finish after that.',
          120_000,
        ),
        settle_ms: ms(
          'How long the control plane places nothing after the first agent registers, so that the others reconnect and report what they run first (placing at once would duplicate every replica not reported yet, and pile a cold-started fleet on its first node), in ms. Keep it near unreachable_after_ms: an agent silent longer is not coming back soon.',
          15_000,
        ),
      },
      { default: {} },
    ),
    admin_token: name('When set, the admin API requires `Authorization: Bearer <admin_token>`.'),
    state_dir: str(
      "Directory of what the server keeps across restarts: the control plane's roster of nodes (so that after a restart it places nothing until they have reported, and no replica is duplicated). Relative to the working directory.",
      { minLength: 1, default: '.llmgw-state/server' },
    ),
    log_level: str('Least severe log level written.', { enum: [...LOG_LEVELS], default: 'info' }),
    access_log: {
      type: 'boolean',
      description: 'One JSON line per inference request on stderr, at info level: method, path, status, model, endpoint, duration, time to first token and of it in the admission queue, band and request id.',
      default: true,
    },
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
        load_refresh_ms: int(
          "Between polls, an engine's load is scraped again (its /metrics alone) once the router's own traffic to it has changed (or requests wait in llmgw's queue) and the last scrape is this old, in ms: a flood sends a poll interval's worth in milliseconds, and admission and the scheduler read the scrape plus what the router did since. At most one scrape per engine per this many ms (a quarter of it while the router holds more in flight to an engine of unknown batch size than it was ever seen running, so a flood's overfill is seen sooner), none while nothing changes, and none while the engine runs only the router's requests well inside its batch (the router's own count says as much). 0: polls only.",
          0,
          { default: 100 },
        ),
        stale_after_ms: ms(
          "How old an engine's scraped load may be before the scheduler ignores it and falls back to the router's own in-flight counts, in ms.",
          5_000,
        ),
        default_profile: str('Routing profile for models that name none and requests without x-llmgw-profile.', { minLength: 1, default: 'chat' }),
        profiles: list(
          'Routing profiles: named scorer weights. They add to the built-in chat, batch and long-context profiles, or replace one of the same name.',
          routingProfile,
          { default: [] },
        ),
        admission: object(
          'Admission control: while the engines of a model are saturated, requests wait in priority bands and are released as capacity frees, highest band first.',
          {
            enabled: { type: 'boolean', description: 'Off: every request is dispatched at once (engines queue first come, first served).', default: true },
            bands: list('Bands, highest priority first.', band, { minItems: 1, default: DEFAULT_BANDS }),
            default_band: name('Band of requests nothing else assigns one to. Unset: the last band but one (silver by default).'),
            priority_header: {
              type: 'boolean',
              description: 'Whether clients may choose their band with x-llmgw-priority (when neither key nor profile sets one).',
              default: false,
            },
            target_waiting_per_replica: {
              type: 'number',
              description:
                'How many requests may wait inside each replica\'s engine: once every replica has this many, requests queue in llmgw by band instead (lower bands do not wait inside an engine at all once its batch size is learnt). The number that governs the system: too low starves the GPUs, too high brings back queueing inside the engines.',
              minimum: 0,
              default: 2,
            },
            reserved_share: {
              type: 'number',
              description:
                "Share of each engine's batch slots (learnt when it first queues) that only the first band may fill, so an interactive request finds a free slot under a batch flood instead of waiting for one.",
              minimum: 0,
              maximum: 1,
              default: 0.1,
            },
            kv_ceiling: { type: 'number', description: 'Saturated when every replica reports KV-cache usage at or above this fraction.', minimum: 0, maximum: 1, default: 0.95 },
            stale_inflight_per_replica: int('While engine metrics are stale: saturated when the router has more than this many requests in flight per replica.', 1, {
              default: 64,
            }),
            max_queued: int('Most requests waiting per model across all bands; past it the lowest band is shed first.', 1, { default: 10_000 }),
            aging_ms: ms('Anti-starvation: every this many ms of waiting, a request counts one band higher, so low bands always make progress.', 10_000),
            prefill_tokens_per_replica: int(
              "Prefill pacing: most prompt tokens of bands below the first being prefilled (admitted, no first token yet) per replica taking traffic; more wait, and go as those reach their first token. A free batch slot is not a short step: an engine prefills what it admits in one step (in one go without a per-step token budget), and a wave of long batch prompts makes an interactive request sharing that step wait for all of it. Counted on each replica too: the scheduler sends a paced prompt where the fewest such tokens await a first token. The default, half vLLM's default step budget, is about two long (RAG-sized) prompts queued ahead of an interactive one; lower protects interactive requests more and costs batch throughput, as the engine then waits for each first token to travel back through the router before the next prompt comes. A replica whose endpoint gives a step budget (max_num_batched_tokens) under half this is paced at twice its budget: a step's prefill under way and the next one's waiting. 0: no pacing. A larger prompt still goes alone.",
              0,
              { default: 4096 },
            ),
            prefill_ms_per_replica: int(
              "Prefill pacing in time: the lower bands' prompt tokens being prefilled per replica also stay under what its engine prefills in this many ms. A token budget means different times on different engines: 4096 tokens are ~70 ms on an 8B model on an H100 and several times that on a slower model or GPU, and an interactive request sharing that step waits for all of it. The engine's time per prompt token is fitted on the router's own requests (the slope of a cohort's wait on its tokens, over the paced prompts whose first chunks came back together; `ctl endpoints` shows it as a rate). Until it is known, a slow start: 256 tokens, then twice the largest cohort that came back within this time of the engine's idle first chunk. Lower protects interactive requests more and costs batch throughput. 0: tokens only.",
              0,
              { default: 25 },
            ),
            recall: {
              type: 'boolean',
              description:
                "Recall: when a request of the first band is sent to an engine that does not order its queue by priority and the router holds there as many requests as the engine has slots (its batch size, else the most it was seen running), the newest lower-band requests there are taken back until one slot is free for it — a streamed one until its first token, a collected one until its answer is sent — and queued again in llmgw at the head of their band. It also takes back the newest lower-band requests there sent before the first band became active and still awaiting their first token, past the engine's prefill pacing budget (the oldest always stays): a batch job that ran alone, unpaced, leaves an engine a queue of long prompts. A request is taken back at most once; what the engine generated for it is lost and not charged. Off: an interactive request waits for the engine's next free slot and for every prompt ahead of it there.",
              default: true,
            },
          },
          { default: {} },
        ),
        retries: object(
          'Retries of a request that failed before its first byte reached the client, each on a different endpoint.',
          {
            max_attempts: int('Most attempts per request, the first included. 1 disables retries.', 1, { maximum: 10, default: 3 }),
            budget_percent: int('Retries waiting for an answer at most this share of the requests in flight, in percent, so a fleet-wide fault cannot become a retry storm.', 0, { maximum: 100, default: 20 }),
            min_retry_concurrency: int('Retries always allowed in flight whatever the budget, so a quiet gateway still rides out an engine that dies under the requests sent to it.', 0, { default: 10 }),
          },
          { default: {} },
        ),
        cooldown: object(
          'A short pause for an endpoint after consecutive failures, so a blip (an engine restarting) costs few requests.',
          {
            failures: int('Consecutive failures that start a cooldown.', 1, { default: 2 }),
            ms: ms('How long the endpoint receives no traffic, in ms.', 2_000),
          },
          { default: {} },
        ),
        breaker: object(
          'A circuit breaker per endpoint: open after consecutive failures, half-open after a pause (one trial request), closed again on success.',
          {
            failures: int('Consecutive failures that open the breaker.', 1, { default: 5 }),
            open_ms: ms('How long the breaker stays open before a trial request, in ms. Doubles each time a trial fails.', 10_000),
            max_open_ms: ms('Longest open period after repeated failed trials, in ms.', 300_000),
          },
          { default: {} },
        ),
        prefix: object(
          'Prefix affinity: prompts are hashed in fixed blocks and sent where their longest prefix was last served, so the engine finds it in its KV cache.',
          {
            block_chars: int('Characters per hashed block (about four per token).', 16, { default: 256 }),
            max_blocks: int('Most blocks hashed per prompt; the head of a long prompt is enough to find its engine.', 1, { default: 256 }),
            index_entries: int('Block hashes remembered, least recently used dropped first.', 1, { default: 200_000 }),
            offload_bytes: int('Prompts longer than this (characters) are hashed on the CPU pool instead of the main thread.', 1, { default: 32_768 }),
          },
          { default: {} },
        ),
      },
      { default: {} },
    ),
    tenancy: object(
      'Tenancy: every data-port request needs an API key (Authorization: Bearer sk-llmgw-…), is held to the rate limits and budgets on its key, project, team and organization, and is billed. Unset: no keys, as without tenancy.',
      {
        store: name("The tenancy database (SQLite, created if absent); its usage journal is the folder beside it with .usage-journal appended. Relative to the config file's folder."),
        hard_budgets: {
          type: 'boolean',
          description: "Off: a budget is checked when a request starts, so one in flight may finish past it. On: a stream whose key's budget runs out mid-way is ended with an error event, and an answer asked for whole is stopped with a 429, charged for what the engine generated.",
          default: false,
        },
        budget_fallback: name('A catalog model (name or alias) served instead, at no cost, to a key whose budget is spent. Unset: such a request is refused with 429 insufficient_quota.'),
        retention_days: int('How many days raw usage records are kept; hourly rollups stay.', 1, { default: 30 }),
      },
      { required: ['store'] },
    ),
    models: list('The model catalog.', model, { default: [] }),
    endpoints: list('Static engines (router-only mode).', endpoint, { default: [] }),
    simulate: list('Simulated engines started in-process.', simulate, { default: [] }),
    simulate_nodes: list(
      'Simulated GPU nodes, each a real agent started in-process after the control plane; on shutdown they stop their engines. Needs a model with profiles and agent_insecure: true.',
      simulateNode,
      { maxItems: MAX_SIMULATED_NODES, default: [] },
    ),
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
