import type { EngineLoad } from '../router/scrape/engine-load.js';
import type { Ask } from '../runtime/protocol.js';

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
}

/** Protocol of the endpoint registry (main thread): the router's view of every engine. */
export type EndpointRegistryMsg =
  | { type: 'probe'; probe: EndpointProbe }
  | ({ type: 'list' } & Ask<EndpointProbe[]>);

/** Protocol of one endpoint's health poller (a worker thread). */
export type HealthPollerMsg = { type: 'poll' } | ({ type: 'poll-now' } & Ask<EndpointProbe>);
