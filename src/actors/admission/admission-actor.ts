import { LlmgwError } from '../../errors.js';
import type { AdmissionMsg } from '../../messages/admission.js';
import type { Admission } from '../../router/admission/admission.js';
import { admissionStats, admissionSummary } from '../../router/admission/admission-stats.js';
import { defineActor } from '../../runtime/actor.js';

export interface AdmissionArgs {
  /** One per model, shared with the data port, which admits and queues synchronously. */
  admissions: ReadonlyMap<string, Admission>;
  /** How often queued requests are checked for release and timeout. */
  tickMs: number;
}

/**
 * Owns the admission queues' clock: releases queued requests when a scrape shows room
 * and fails those past their band's timeout, every `tickMs`; completions release too,
 * from the data port. It runs on the main thread and is handed the queues themselves
 * (main-thread spawn arguments are not copied): the data port queues a request without
 * a message, and a release wakes the request without one.
 */
export const admissionActor = defineActor<AdmissionMsg>()({
  kind: 'admission',
  module: import.meta.url,
  // Ticks are idempotent and the next one comes in tickMs; a stats ask that has to make
  // room fails with LLMGW_MAILBOX_FULL at once. Nothing here carries a bill or a command:
  // queued requests live in the queues, not in this mailbox.
  mailbox: { capacity: 64, overflow: 'drop-oldest' },
  init: (args: AdmissionArgs, ctx) => {
    if (ctx.thread !== 'main') throw new Error('admission must run on the main thread, beside the data port');
    ctx.schedule('tick', args.tickMs, { type: 'tick' }, true);
    return args;
  },
  handlers: {
    tick: (s) => {
      const now = Date.now();
      for (const a of s.admissions.values()) a.release(now);
    },
    stats: (s) => admissionStats(s.admissions, Date.now()),
  },
  stop: (s) => {
    const err = new LlmgwError('LLMGW_SHUTTING_DOWN', 'the server is shutting down; retry on another instance');
    for (const a of s.admissions.values()) a.queue.drain(err);
  },
  describe: (s) => admissionSummary(s.admissions),
});
