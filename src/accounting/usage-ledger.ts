import type { UsageRecord, UsageTotals } from '../messages/accounting.js';

/**
 * Running totals and the latest records, as the admin API shows them. Tenancy will
 * bill from the same stream of records.
 */
export class UsageLedger {
  readonly totals: UsageTotals = { requests: 0, promptTokens: 0, completionTokens: 0, cachedTokens: 0, byModel: {} };
  private readonly ring: UsageRecord[] = [];
  private next = 0;

  /** Keeps the latest `keep` records. */
  constructor(private readonly keep: number) {}

  /** Adds `r` to the recent records and to the totals of `model` (a bounded label, see ModelLabels). */
  add(r: UsageRecord, model: string): void {
    if (this.ring.length < this.keep) this.ring.push(r);
    else this.ring[this.next] = r;
    this.next = (this.next + 1) % this.keep;

    const t = this.totals;
    t.requests++;
    t.promptTokens += r.promptTokens;
    t.completionTokens += r.completionTokens;
    t.cachedTokens += r.cachedTokens;
    const per = (t.byModel[model] ??= { requests: 0, promptTokens: 0, completionTokens: 0, errors: 0 });
    per.requests++;
    per.promptTokens += r.promptTokens;
    per.completionTokens += r.completionTokens;
    if (r.status >= 400) per.errors++;
  }

  /** The latest `limit` records, oldest first. */
  recent(limit: number): UsageRecord[] {
    const ordered = this.ring.length < this.keep ? this.ring : [...this.ring.slice(this.next), ...this.ring.slice(0, this.next)];
    return ordered.slice(-Math.max(0, limit));
  }
}
