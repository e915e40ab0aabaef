import type { AdmissionConfig } from '../../config/types.js';
import type { EndpointState } from '../endpoint-table.js';
import { admissionBacklog, batchSlots, firstBandPrefilling, occupancy } from '../load-estimate.js';
import { recallCount } from './recall.js';

/** Why a model's engines count as saturated, or null when they can take more now. */
export type Saturation = string | null;

export interface SaturationQuery {
  /** Released from the admission queue, not yet dispatched: counted as waiting. */
  inTransit: number;
  /**
   * Whether the request is of the first band. The others fill no slot of the reserved
   * share: that is what an interactive request arriving finds free. (Keeping as many
   * slots free again as the first band had in flight cost bronze 40–60 % of its
   * throughput in the admission bench where platinum was a quarter of the load; an
   * arrival needs a free slot only until the next lower-band request ends.)
   */
  first: boolean;
  /**
   * For lower bands on an engine whose batch capacity is not learnt yet: true, held to
   * the adaptive `limit` (see `freeSlots`); false, only the waiting target holds them back — nothing
   * of the first band is in use to protect.
   */
  slowStart: boolean;
  /** The adaptive limit on requests in flight per replica, read where `slowStart` holds (`adaptive-limit.ts`). */
  limit: number;
  /** Lower bands keep off a replica this long after a first-band request is sent there, until its first chunk (`firstBandPrefilling`). */
  gateMs: number;
}

/**
 * Whether a model's usable replicas are saturated, from what the pollers last scraped
 * plus what the router itself sent and saw finish since (see `load-estimate.ts`).
 * Without fresh scrapes, the router's in-flight count per replica stands in.
 *
 * Room is counted per replica and summed, because the scheduler sends each request to
 * one replica: one engine with a long queue must not hide the free slots of another.
 * Only replicas of the highest usable priority count, as only they take traffic.
 *
 * The first band may go while some replica has fewer than `target_waiting_per_replica`
 * of other bands' requests waiting inside its engine (free batch slots count as room
 * too), trusting the scrape (leaning idle) but counting what the router sent since
 * (`admissionBacklog`). Lower bands are held to a stricter rule (leaning busy): they only
 * fill free batch slots outside the reserved share — a lower-band request waiting inside
 * an engine would take the next free slot ahead of an interactive request arriving a
 * moment later.
 */
export function saturation(endpoints: readonly EndpointState[], cfg: AdmissionConfig, now: number, staleAfterMs: number, q: SaturationQuery): Saturation {
  let replicas = 0;
  let fresh = 0;
  let waiting = 0;
  let room = 0;
  let free = 0;
  let inflight = 0;
  let minKv = Infinity;
  const target = cfg.target_waiting_per_replica;
  // Only the highest usable priority takes traffic (the scheduler keeps lower ones as
  // spares), so only its room counts: a spare's free slots would admit requests the
  // scheduler then queues on the busy tier.
  const top = servingPriority(endpoints, now);
  for (const e of endpoints) {
    if (e.priority !== top || !usable(e, now)) continue;
    replicas++;
    inflight += e.inflight;
    if (e.load === null || e.loadAt === null || now - e.loadAt > staleAfterMs) continue;
    fresh++;
    // Each band reads only its own rule's figures: this runs on every request.
    if (q.first) {
      // Free batch slots (a negative backlog) count as room too.
      const ahead = waitingAheadOfTop(e, cfg, now);
      waiting += Math.max(0, ahead);
      room += Math.max(0, target - ahead);
    } else if (!firstBandPrefilling(e, now, q.gateMs)) {
      free += freeSlots(e, cfg, q.slowStart, q.limit);
    }
    minKv = Math.min(minKv, e.load.kvUsage ?? 0);
  }
  // No usable replica is not saturation: the dispatcher answers that with a 503 at once.
  if (replicas === 0) return null;
  inflight += q.inTransit;
  if (fresh === 0) {
    const limit = cfg.stale_inflight_per_replica * replicas;
    return inflight >= limit ? `${inflight} requests in flight on ${replicas} replicas with stale metrics (limit ${limit})` : null;
  }
  if (!q.first) {
    if (free <= q.inTransit) return `no free batch slot on ${fresh} replicas beyond the reserved ones`;
  } else if (room <= q.inTransit) {
    const transit = q.inTransit > 0 ? `, ${q.inTransit} released on their way` : '';
    return `${Math.round(waiting)} waiting in the engines of ${fresh} replicas${transit}: none under the target of ${target} per replica`;
  }
  if (fresh === replicas && minKv >= cfg.kv_ceiling) return `KV cache ${Math.round(minKv * 100)}% full on every replica (ceiling ${Math.round(cfg.kv_ceiling * 100)}%)`;
  return null;
}

/**
 * Requests a first-band request sent to `e` now would wait behind inside its engine
 * (negative: free batch slots):
 * those estimated waiting there (`admissionBacklog`), less any that can only be the
 * router's own first-band requests — all the engine holds beyond those is lower-band or
 * another client's. First-band requests ahead of it in the engine's queue are no reason
 * to hold it: it would wait behind them in llmgw's queue too, and held there it would
 * only lose the engine's next free slot. Counting them throttled an interactive client
 * on its own to twice what the engine was last seen running, a doubling per poll
 * interval: 1.2 s of queueing in the first seconds after a start. Nor are the
 * lower-band requests that sending it would recall (`Admission.makeWay`): held in llmgw
 * for them, it would wait until the engine had served them.
 */
function waitingAheadOfTop(e: EndpointState, cfg: AdmissionConfig, now: number): number {
  const b = admissionBacklog(e, cfg.kv_ceiling, 'idle');
  if (b <= 0) return b;
  const ahead = Math.min(b, Math.max(0, occupancy(e, 'idle') - e.topInflight));
  return cfg.recall && e.enginePriority === null ? Math.max(0, ahead - recallCount(e)) : ahead;
}

/** The priority of the replicas taking traffic now: the highest usable one (-Infinity: none). */
export function servingPriority(endpoints: readonly EndpointState[], now: number): number {
  let top = -Infinity;
  for (const e of endpoints) if (e.priority > top && usable(e, now)) top = e.priority;
  return top;
}

/** Whether `e` may take requests now. */
export function usable(e: EndpointState, now: number): boolean {
  return e.ready && !e.draining && e.health.blocked(now) === null;
}

/**
 * Batch slots a lower band may still fill on a replica: its batch slots (`batchSlots`:
 * its capacity, or what its KV cache holds where that is less) less the reserved share,
 * less what it holds now (leaning busy). While an engine's capacity is not known, the
 * adaptive `limit` on what the router has in flight to it (`adaptive-limit.ts`, or what
 * the KV cache holds where that is less), and nothing while it is seen queueing. Without `slowStart`,
 * the room under the waiting target instead, taking the engine to run twice the most it
 * was seen running until it queues (`admissionBacklog`): a batch job arriving at an idle
 * fleet must not put all of itself in the engines' queues within one poll interval,
 * where an interactive request arriving a moment later waits behind all of it.
 */
export function freeSlots(e: EndpointState, cfg: AdmissionConfig, slowStart: boolean, limit: number): number {
  const load = e.load!;
  // Work-conserving: a replica that runs nothing, queues nothing and has nothing of the
  // router's in flight takes one request of any band. Whatever the rules below learnt
  // wrong (a capacity read too small, an adaptive limit at its floor), they can then
  // slow the lower bands down but never hold them for good in front of idle engines.
  const idle = e.inflight === 0 && load.running === 0 && load.waiting === 0 ? 1 : 0;
  if (e.batchCapacity === null) {
    if (!slowStart) return Math.max(idle, cfg.target_waiting_per_replica - admissionBacklog(e, cfg.kv_ceiling, 'busy'));
    if (load.waiting > 0 || (load.kvUsage ?? 0) >= cfg.kv_ceiling) return 0;
    return Math.max(idle, batchSlots(e, limit)! - e.inflight);
  }
  const slots = batchSlots(e)!;
  const room = slots - Math.ceil(slots * cfg.reserved_share);
  return Math.max(idle, room - occupancy(e, 'busy'));
}
