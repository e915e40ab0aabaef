import type { AdmissionConfig } from '../../config/types.js';
import type { EndpointState } from '../endpoint-table.js';

/** Why a model's engines count as saturated, or null when they can take more now. */
export type Saturation = string | null;

/**
 * Whether a model's usable replicas are saturated, from what the pollers last scraped
 * plus what the router itself sent since: a scrape is up to a poll interval old, and a
 * flood sends hundreds of requests in that time (see `estimatedWaiting`). Requests
 * released from the admission queue but not yet dispatched (`inTransit`) count as
 * waiting too. Without fresh scrapes, the router's in-flight count per replica stands in.
 */
export function saturation(endpoints: readonly EndpointState[], cfg: AdmissionConfig, now: number, staleAfterMs: number, inTransit = 0): Saturation {
  let replicas = 0;
  let fresh = 0;
  let waiting = 0;
  let inflight = 0;
  let minKv = Infinity;
  for (const e of endpoints) {
    if (!e.ready || e.draining || e.health.blocked(now) !== null) continue;
    replicas++;
    inflight += e.inflight;
    if (e.load === null || e.loadAt === null || now - e.loadAt > staleAfterMs) continue;
    fresh++;
    waiting += estimatedWaiting(e, cfg);
    minKv = Math.min(minKv, e.load.kvUsage ?? 0);
  }
  // No usable replica is not saturation: the dispatcher answers that with a 503 at once.
  if (replicas === 0) return null;
  inflight += inTransit;
  waiting += inTransit;
  if (fresh === 0) {
    const limit = cfg.stale_inflight_per_replica * replicas;
    return inflight >= limit ? `${inflight} requests in flight on ${replicas} replicas with stale metrics (limit ${limit})` : null;
  }
  const limit = cfg.target_waiting_per_replica * fresh;
  if (waiting > limit) return `${Math.round(waiting)} waiting in the engines of ${fresh} replicas (target ${limit})`;
  if (fresh === replicas && minKv >= cfg.kv_ceiling) return `KV cache ${Math.round(minKv * 100)}% full on every replica (ceiling ${Math.round(cfg.kv_ceiling * 100)}%)`;
  return null;
}

/**
 * A replica's waiting queue now: what its last scrape reported, plus what the router sent
 * it since (in-flight growth) beyond what its batch can still take. Once the engine has
 * been seen queueing, its batch capacity is known and a burst is counted against it at
 * once; before that, growth counts only where the engine already queues or its KV cache
 * is full (an engine with free slots runs new requests at once).
 */
export function estimatedWaiting(e: EndpointState, cfg: AdmissionConfig): number {
  const load = e.load!;
  const growth = Math.max(0, e.inflight - e.inflightAtLoad);
  if (e.batchCapacity !== null) return Math.max(0, load.waiting + load.running + growth - e.batchCapacity);
  if (load.waiting > 0 || (load.kvUsage ?? 0) >= cfg.kv_ceiling) return load.waiting + growth;
  return load.waiting;
}
