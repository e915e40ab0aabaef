import type { ScorerName } from '../../config/types.js';
import type { EndpointState } from '../endpoint-table.js';

/** What the scheduler knows about one request when it picks an endpoint for it. */
export interface RouteRequest {
  /** The canonical model name being served (after alias and fallback resolution). */
  readonly model: string;
  /** Chained block hashes of the prompt's head (see tasks/prefix-hash.ts), or null. */
  readonly prefix: Float64Array | null;
  /** Session key (x-llmgw-session or the `user` field), or null. */
  readonly session: string | null;
  /** Endpoints that already failed this request: a retry goes elsewhere. */
  readonly tried: readonly EndpointState[];
  /** Wall-clock ms; scraped loads older than `staleAfterMs` are not trusted. */
  readonly now: number;
  /** Set for a request of the first admission band: it goes to a replica with the most free batch slots (`most-room.ts`). */
  readonly room?: RoomQuery | null;
  /** Set for a request of a lower admission band: it keeps off replicas prefilling a first-band prompt sent within this many ms (`keepClearOfFirstBand`). */
  readonly firstBandGateMs?: number | null;
  /**
   * Set for a prefill-paced lower-band request while a first band is in use, unless an
   * engine is taken to hold its prompt's head: it goes to a replica with the fewest such
   * prompt tokens awaiting a first token (`keepLeastPrefilling`).
   */
  readonly prefillTokens?: number;
}

export interface RoomQuery {
  /** Batch slots assumed per replica whose capacity is neither configured nor learnt (admission's adaptive limit); null: none. */
  readonly unknownCapacity: number | null;
}

/** Removes endpoints that must not take the request; says why in an operator's words. */
export interface Filter {
  readonly name: string;
  reject(e: EndpointState, req: RouteRequest): string | null;
}

/**
 * Scores every candidate from 0 (worst) to 1 (best) into `out`, one slot per candidate.
 * Scorers see all candidates at once because several scores are relative (the least
 * loaded endpoint scores 1) and some need one lookup per request, not per endpoint.
 */
export interface Scorer {
  readonly name: ScorerName;
  score(candidates: readonly EndpointState[], req: RouteRequest, out: Float64Array): void;
}

/** A routing profile, resolved: scorers with non-zero weights. */
export interface Profile {
  readonly name: string;
  /** Admission band of requests routed with this profile, if it sets one. */
  readonly band: string | null;
  readonly terms: readonly { readonly scorer: Scorer; readonly weight: number }[];
  /** Whether a prefix scorer weighs in: only then is the prompt's head hashed. */
  readonly usesPrefix: boolean;
}
