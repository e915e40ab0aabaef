import { ModelLabels } from '../../accounting/model-labels.js';
import { observeRequest, requestMetrics } from '../../accounting/request-metrics.js';
import { UsageLedger } from '../../accounting/usage-ledger.js';
import type { AccountingMsg } from '../../messages/accounting.js';
import { defineActor } from '../../runtime/actor.js';

export interface AccountingArgs {
  /** Recent records kept for the admin API (`/admin/v1/usage`). */
  recent: number;
  /** Every catalog model name and alias → the canonical name it is counted under (see ModelLabels). */
  models: Readonly<Record<string, string>>;
}

/**
 * Receives one usage record per request from the data port and turns it into the
 * request metrics and running totals. It runs off the main thread: the data port sends
 * the records of each event-loop turn as one message (a postMessage per record cost it
 * ~6% of its CPU at 7k req/s) and prom-client's label lookups happen here. Tenancy
 * (budgets, the usage store) will consume the same stream.
 */
export const accounting = defineActor<AccountingMsg>()({
  kind: 'accounting',
  module: import.meta.url,
  // Losing a record loses a bill, so a full mailbox refuses and the sender keeps the
  // records (UsageBatcher sends one batch at a time, so this is room for bursts of asks
  // for totals and recent records beside it).
  mailbox: { capacity: 1_024, overflow: 'reject' },
  init: (args: AccountingArgs, ctx) => ({ ledger: new UsageLedger(args.recent), m: requestMetrics(ctx.metrics), labels: new ModelLabels(args.models) }),
  handlers: {
    records: (s, { records }) => {
      for (const r of records) {
        const model = s.labels.of(r.modelServed ?? r.modelAsked);
        s.ledger.add(r, model);
        observeRequest(s.m, r, model, s.labels.of(r.modelAsked));
      }
    },
    recent: (s, { limit }) => s.ledger.recent(limit),
    totals: (s) => s.ledger.totals,
    // A restart of this actor goes back to the names it was spawned with, until the next reload.
    catalog: (s, m) => {
      s.labels = new ModelLabels(m.models);
    },
  },
});
