import { probing, type EndpointState } from '../endpoint-table.js';
import { batchSlots } from '../load-estimate.js';

/**
 * How many of the newest requests in `e.recallable` a first-band request about to be
 * sent to `e` takes back so that it finds a free batch slot there (`Admission.makeWay`):
 * what the router holds there beyond the slots known to exist, and one more for the
 * first-band request itself. The slots known: the batch size where it is known, else the
 * most requests the engine was seen running (the router's own streams count), and fewer
 * where its KV cache holds fewer (`batchSlots`).
 *
 * The newest, because an engine serving first come, first served queues the last sent,
 * and of those it runs, the last sent have done the least: a request still waiting costs
 * nothing to cancel, one running loses what it had generated (its answer was collected,
 * so none of it had reached the client) — the price of a free slot now rather than when
 * the next lower-band answer ends. With the size unknown, a request beyond what was seen
 * running may have had a slot anyway; that is the price of not knowing it. So is a
 * learnt size being probed upwards (`endpoint-table.ts`): until the engine runs more,
 * the slots are the most it ran, and a probe of a full engine costs the first band no
 * slot (in the admission bench, without this, engines of 16 probed once in a phase took
 * platinum's flood p99 from 30–60 ms to 90–330 ms).
 *
 * The router's count is current where a scrape is not, and what a scrape adds (other
 * clients' requests) cannot be recalled anyway. Never more than `e.recallable` holds;
 * none where the engine was never seen running anything and its size is unknown.
 */
export function recallCount(e: Pick<EndpointState, 'inflight' | 'batchSize' | 'batchCapacity' | 'load' | 'peakRunning' | 'recallable'>): number {
  // Never seen running anything (a new or restarted engine): nothing is known to be full.
  if (e.batchCapacity === null && e.peakRunning === 0) return 0;
  // A learnt capacity above the most the engine ran is being probed: the slots past that are a guess.
  const slots = batchSlots(probing(e) ? { batchCapacity: e.peakRunning, load: e.load } : e, e.peakRunning)!;
  return Math.min(e.recallable.length, Math.max(0, e.inflight + 1 - slots));
}
