import { address, type Address, type Ask } from '../runtime/protocol.js';

/** The scheduler's view of one engine's own report. */
export interface EngineLoad {
  /** Requests queued inside the engine. */
  waiting: number;
  /** Requests in the running batch. */
  running: number;
  /** KV-cache usage as a fraction 0–1, or null when the engine does not report it. */
  kvUsage: number | null;
  /**
   * The engine's inter-token latency histogram totals (seconds, samples) since it
   * started: between two scrapes, their difference is its mean step time. Absent when
   * the engine does not publish one.
   */
  itl?: { sum: number; count: number } | null;
  /**
   * vLLM's tokens-per-step histogram (`vllm:iteration_tokens_total`) since it started:
   * tokens computed, steps taken, and steps at or below each finite bucket bound
   * (cumulative, bounds ascending). Between two scrapes, the steps against the step
   * budget say whether the engine's queue waited on the budget, not on a slot
   * (`largestStep` in `router/scrape/engine-load.ts`).
   */
  steps?: StepTotals | null;
}

/** Totals of vLLM's tokens-per-step histogram, summed over data-parallel engines. */
export interface StepTotals {
  tokens: number;
  count: number;
  /** [bound, steps of at most that many tokens], bounds ascending, +Inf left out. */
  buckets: ReadonlyArray<readonly [number, number]>;
}

/**
 * How an engine says it runs, where it publishes its settings (SGLang's `/server_info`):
 * what a config or a profile's engine args would otherwise have to tell the router.
 * Each null where the engine does not say.
 */
export interface EngineSettings {
  /** Requests it runs at once (SGLang `max_running_requests`). */
  batchSize: number | null;
  /** Its per-step prefill token budget (SGLang `chunked_prefill_size`); 0: none, chunking off. */
  stepBudget: number | null;
  /** How it orders a request's `priority` field; null: first come, first served. */
  enginePriority: 'lower-first' | 'higher-first' | null;
}

/** What a poller learnt about one endpoint. Compact: it crosses threads on every poll. */
export interface EndpointProbe {
  id: string;
  ready: boolean;
  /** Why the endpoint is not ready, in words an operator can act on. */
  reason: string | null;
  /** Model ids the endpoint's /v1/models listed. */
  models: string[];
  /** The smallest `max_model_len` /v1/models lists for the served names; null when it lists none (not vLLM). */
  maxModelLen: number | null;
  /** Wall-clock ms of the probe. */
  at: number;
  /** The engine's load from its /metrics, or null when the scrape failed (see loadError). */
  load: EngineLoad | null;
  loadError: string | null;
  /**
   * The settings the engine publishes, read once each time it turns ready: null where it
   * publishes none (vLLM by default); absent while not known (not ready, or not asked yet).
   */
  settings?: EngineSettings | null;
}

/** A replica the control plane placed and found ready: an endpoint the router may send to. */
export interface PlacedEndpoint {
  /** The replica id. */
  id: string;
  url: string;
  models: string[];
  weight: number;
  /** From the profile's `--max-num-seqs`, when it sets one. */
  batchSize: number | null;
  /** GPUs the replica runs on (tp × pp), for pricing in GPU-seconds. */
  gpus: number;
  /** The per-step token budget (`max_num_batched_tokens`, from the config or the profile's engine args); 0: none; null or absent: unknown. */
  stepBudget?: number | null;
  /** How the engine orders the request's `priority` field, from the profile's engine args; null or absent: it does not. */
  enginePriority?: 'lower-first' | 'higher-first' | null;
}

/** An endpoint of the config's static list, as a reload hands it over. */
export interface ConfiguredEndpoint extends PlacedEndpoint {
  priority: number;
  pool: string | null;
  enginePriority: 'lower-first' | 'higher-first' | null;
}

/** Protocol of the endpoint registry (main thread): the router's view of every engine. */
export type EndpointRegistryMsg =
  | { type: 'probe'; probe: EndpointProbe }
  /** A scrape of the engine's load alone, asked for between polls (`EndpointTable` refresh). */
  | { type: 'load'; id: string; at: number; load: EngineLoad | null; loadError: string | null }
  | ({ type: 'list' } & Ask<EndpointProbe[]>)
  /**
   * The control plane's whole set of ready replicas, replacing the last one it sent
   * (static endpoints stay). Answered once the table no longer routes to those left out,
   * so a replica is drained only after the router stopped sending it new requests.
   */
  | ({ type: 'placed'; version: number; endpoints: PlacedEndpoint[] } & Ask<{ version: number; added: string[]; removed: string[] }>)
  /** A reloaded config's static endpoints, replacing the last list (placed and simulated ones stay). */
  | ({ type: 'configured'; endpoints: ConfiguredEndpoint[] } & Ask<{ added: string[]; removed: string[] }>);

/** Protocol of one endpoint's health poller (a worker thread). */
export type HealthPollerMsg = { type: 'poll' } | ({ type: 'poll-now' } & Ask<EndpointProbe>) | { type: 'scrape' };

export const ENDPOINT_REGISTRY = address<EndpointRegistryMsg>('endpoint-registry');

/** The health poller of endpoint `id`. */
export const healthPollerAddress = (id: string): Address<HealthPollerMsg> => address(`poller:${id}`);
