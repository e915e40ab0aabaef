import type { EndpointState } from '../endpoint-table.js';

/**
 * A lower-band request with no first token after this many of the engine's steps is
 * taken to wait in its queue, not to be prefilling: an admitted request has its first
 * token within a step or two, and prefill pacing keeps the lower bands' prompts in
 * flight to about one step's token budget per engine.
 */
export const STUCK_STEPS = 4;
/**
 * ...and never sooner than this (ms): a first token the router has not read yet because
 * its own thread was busy must not read as a queue. Under a flood on 2 cores the main
 * thread's turns were seen up to ~10 ms apart.
 */
export const STUCK_MIN_MS = 20;

/**
 * How many of the newest requests in `e.unstarted` a first-band request sent to `e` now
 * would wait behind inside its engine, which serves its queue first come, first served:
 * the router recalls that many (`Admission.makeWay`). In such an engine every request
 * sent after one that waits, waits too, so the waiting ones are always the newest.
 *
 * - Batch size known: what the router holds there beyond it. The router's own count is
 *   current where a scrape is not, and what the scrape adds (other clients' requests)
 *   cannot be recalled anyway.
 * - Not known: every request from the oldest one that has gone `STUCK_STEPS` steps
 *   without a first token; none while the step time is not known (no tokens seen yet).
 *
 * Never more than `e.unstarted` holds: requests that have begun are the engine's to
 * finish, and a first-band request waits behind those only for a free slot.
 */
export function recallCount(e: Pick<EndpointState, 'inflight' | 'batchCapacity' | 'stepMs' | 'unstarted'>, now: number): number {
  const n = e.unstarted.length;
  if (n === 0) return 0;
  if (e.batchCapacity !== null) return Math.min(n, Math.max(0, e.inflight - e.batchCapacity));
  if (e.stepMs === null) return 0;
  const stuckBefore = now - Math.max(STUCK_MIN_MS, STUCK_STEPS * e.stepMs);
  // Oldest first: if any has waited that long, the oldest has, and all after it wait behind it.
  return e.unstarted[0]!.sentAt <= stuckBefore ? n : 0;
}
