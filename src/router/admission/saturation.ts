import type { AdmissionConfig } from '../../config/types.js';
import type { EndpointState } from '../endpoint-table.js';

/** Why a model's engines count as saturated, or null when they can take more now. */
export type Saturation = string | null;

export interface SaturationQuery {
  /** Released from the admission queue, not yet dispatched: counted as waiting. */
  inTransit: number;
  /**
   * Null for the first band. For the others, the top band's requests in flight: lower
   * bands keep as many batch slots free again, on top of `reserved_share`, so an
   * interactive request arriving finds a free slot instead of waiting for one.
   */
  holdBack: number | null;
}

/**
 * Whether a model's usable replicas are saturated, from what the pollers last scraped
 * plus what the router itself sent since: a scrape is up to a poll interval old, and a
 * flood sends hundreds of requests in that time (see `estimatedWaiting`). Without fresh
 * scrapes, the router's in-flight count per replica stands in.
 *
 * The first band is saturated when more than `target_waiting_per_replica` wait inside
 * the engines. Lower bands are held to a stricter rule: they only fill free batch slots
 * outside the reserved share, and leave as many again as the first band has in flight —
 * a lower-band request waiting inside an engine would take the next free slot ahead of
 * an interactive request arriving a moment later.
 */
export function saturation(endpoints: readonly EndpointState[], cfg: AdmissionConfig, now: number, staleAfterMs: number, q: SaturationQuery): Saturation {
  let replicas = 0;
  let fresh = 0;
  let waiting = 0;
  let free = 0;
  let inflight = 0;
  let minKv = Infinity;
  for (const e of endpoints) {
    if (!e.ready || e.draining || e.health.blocked(now) !== null) continue;
    replicas++;
    inflight += e.inflight;
    if (e.load === null || e.loadAt === null || now - e.loadAt > staleAfterMs) continue;
    fresh++;
    waiting += estimatedWaiting(e, cfg);
    free += freeSlots(e, cfg);
    minKv = Math.min(minKv, e.load.kvUsage ?? 0);
  }
  // No usable replica is not saturation: the dispatcher answers that with a 503 at once.
  if (replicas === 0) return null;
  inflight += q.inTransit;
  if (fresh === 0) {
    const limit = cfg.stale_inflight_per_replica * replicas;
    return inflight >= limit ? `${inflight} requests in flight on ${replicas} replicas with stale metrics (limit ${limit})` : null;
  }
  if (q.holdBack !== null) {
    const keep = q.inTransit + q.holdBack;
    if (free <= keep) return `no free batch slot on ${fresh} replicas beyond the reserved ones and ${q.holdBack} kept for the first band`;
  } else {
    const limit = cfg.target_waiting_per_replica * fresh;
    if (waiting + q.inTransit > limit) return `${Math.round(waiting + q.inTransit)} waiting in the engines of ${fresh} replicas (target ${limit})`;
  }
  if (fresh === replicas && minKv >= cfg.kv_ceiling) return `KV cache ${Math.round(minKv * 100)}% full on every replica (ceiling ${Math.round(cfg.kv_ceiling * 100)}%)`;
  return null;
}

/**
 * A replica's waiting queue now: what its last scrape reported, plus what the router sent
 * it since, less what finished since, beyond what its batch can take. Once the engine has
 * been seen queueing, its batch capacity is known and a burst is counted against it at
 * once; before that, growth counts only where the engine already queues or its KV cache
 * is full (an engine with free slots runs new requests at once).
 */
export function estimatedWaiting(e: EndpointState, cfg: AdmissionConfig): number {
  const load = e.load!;
  // Sent minus finished since the scrape: negative when more finished than were sent.
  const delta = e.inflight - e.inflightAtLoad;
  if (e.batchCapacity !== null) return Math.max(0, load.waiting + load.running + delta - e.batchCapacity);
  const growth = Math.max(0, delta);
  if (load.waiting > 0 || (load.kvUsage ?? 0) >= cfg.kv_ceiling) return load.waiting + growth;
  return load.waiting;
}

/**
 * Batch slots a lower band may still fill on a replica: its learnt capacity less the
 * reserved share, less what runs, waits or was sent since the scrape. While an engine's
 * capacity is not known, a slow start: as many again as it runs per scrape, until it is
 * seen queueing (which teaches the capacity) — a burst cannot flood an engine whose
 * size is unknown, and a large engine is filled within a few poll intervals.
 */
export function freeSlots(e: EndpointState, cfg: AdmissionConfig): number {
  const load = e.load!;
  const delta = e.inflight - e.inflightAtLoad;
  if (e.batchCapacity === null) return load.waiting === 0 && (load.kvUsage ?? 0) < cfg.kv_ceiling ? Math.max(0, Math.max(1, load.running) - delta) : 0;
  const room = e.batchCapacity - Math.ceil(e.batchCapacity * cfg.reserved_share);
  return Math.max(0, room - load.waiting - load.running - delta);
}
