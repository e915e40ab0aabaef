import type { AccountingMsg, UsageRecord } from '../../messages/accounting.js';
import type { ActorRef } from '../../runtime/index.js';

/**
 * Sends the data port's usage records to the accounting actor as one message per
 * event-loop turn: the requests that end in the same turn share one postMessage to the
 * telemetry thread instead of paying one each. `flush()` sends what is pending now
 * (shutdown calls it before the actors stop).
 */
export class UsageBatcher {
  private pending: UsageRecord[] = [];

  constructor(private readonly accounting: ActorRef<AccountingMsg>) {}

  readonly add = (record: UsageRecord): void => {
    if (this.pending.push(record) === 1) setImmediate(this.flush);
  };

  readonly flush = (): void => {
    if (this.pending.length === 0) return;
    const records = this.pending;
    this.pending = [];
    this.accounting.tell({ type: 'records', records });
  };
}
