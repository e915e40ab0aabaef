import type { ModelAdmissionStats } from '../../messages/admission.js';
import type { Admission } from './admission.js';

/** Every model's queues as `llmgw ctl admission` shows them: depth, oldest wait, and why each band would wait now. */
export function admissionStats(admissions: ReadonlyMap<string, Admission>, now: number): ModelAdmissionStats[] {
  return [...admissions.values()].map((a) => ({
    model: a.model,
    saturated: a.saturated(now),
    adaptiveLimit: a.adaptiveLimit,
    bands: a.queue.stats().map((b, i) => ({ ...b, oldestWaitMs: a.queue.oldestWait(i, now), held: a.holdReason(i, now) })),
  }));
}

/** One line for `llmgw ctl actors`: what is queued, per model and band. */
export function admissionSummary(admissions: ReadonlyMap<string, Admission>): string {
  return [...admissions.values()]
    .map((a) => `${a.model}: ${a.queue.length} queued${a.queue.length > 0 ? ` (${a.queue.stats().map((b) => `${b.band} ${b.queued}`).join(', ')})` : ''}`)
    .join('; ');
}
