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

/**
 * Takes back the lower-band requests on `e` still awaiting their first chunk that were
 * sent before `pacedSince`, the newest first and never the oldest awaiting one (a prompt
 * over the budget goes alone), until no more of those prompts' tokens wait there than
 * `budget` (`pacingBudget`): a first-band request is about to be sent there. Pacing
 * holds that bound only while a first band is active (`Admission.firstBandActive`); a
 * batch job running alone fills each engine with as many long prompts as it has slots,
 * and the first interactive request after it would wait for all of them — in the
 * admission bench, 40–50 prompts of 1,400–1,900 tokens per engine of 64, 300–360 ms,
 * when the interactive client came second. The newest sent are the last in the engine's
 * queue, so taking them back costs no prefill done. What was sent paced is left to
 * pacing: taken back too, as its budget moved with the engine's fitted cost, 20–60 a run
 * were recalled in cells where the onset took none, and bronze fell. Returns how many
 * were recalled.
 */
export function recallUnpacedPrefill(e: Pick<EndpointState, 'lowerPrefilling' | 'recallable'>, budget: number, pacedSince: number, now: number): number {
  if (e.lowerPrefilling <= budget) return 0;
  const waiting = e.recallable.filter((l) => l.awaitingPrefill > 0);
  let recalled = 0;
  for (let i = waiting.length - 1; i > 0 && e.lowerPrefilling > budget; i--) if (waiting[i]!.leasedAt < pacedSince && waiting[i]!.recall(now)) recalled++;
  return recalled;
}
