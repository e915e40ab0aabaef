import { Counter, Gauge, Registry } from 'prom-client';
import { LlmgwError } from '../errors.js';
import { createLogger, type Logger } from '../log.js';
import type { AccountingMsg, UsageRecord } from '../messages/accounting.js';
import type { ActorRef } from '../runtime/index.js';

/**
 * Records held while the accounting actor cannot take them (its thread restarting, its
 * mailbox full): at ~0.5 kB each, ~50 MB, minutes of traffic at 1k req/s. Past it the
 * oldest go, counted and logged; below it no bill is lost.
 */
const MAX_PENDING = 100_000;
/** After a refusal the records wait this long before they are sent again, instead of spinning. */
const RETRY_MS = 10;
/**
 * Batches go at most this often. Each one is a round trip to the telemetry thread, and on
 * a busy host each post wakes that thread and often switches the core to it: at tens of
 * requests a second a batch per event-loop turn was one per request. Records (and the
 * metrics drawn from them) reach the actor up to this late; shutdown flushes at once.
 */
const SEND_INTERVAL_MS = 100;
/**
 * A refusal comes back at once; an ask that gets no answer this long sits in the
 * mailbox behind others, so it counts as taken rather than being sent twice.
 */
const CONFIRM_TIMEOUT_MS = 30_000;

export interface UsageBatcherOptions {
  maxPending?: number;
  retryMs?: number;
  intervalMs?: number;
  log?: Logger;
}

/**
 * Sends the data port's usage records to the accounting actor in batches: what ends in
 * the same event-loop turn, and what ends within SEND_INTERVAL_MS of the last batch,
 * shares one postMessage to the telemetry thread instead of paying one each. One batch
 * is in flight at a time; what arrives meanwhile goes with the next, so the actor's
 * mailbox never holds more than a batch and the records wait here, bounded. A refused
 * batch (full mailbox, the actor restarting) is kept and sent again first. `flush()` sends what is pending now
 * (shutdown calls it before the actors stop).
 */
export class UsageBatcher {
  private pending: UsageRecord[] = [];
  private inFlight = false;
  private timer: NodeJS.Timeout | undefined;
  private immediate = false;
  /** A refusal was logged and no batch has been taken since: one line per episode. */
  private refusing = false;
  /** Records are being dropped; logged once until a batch is sent with room to spare. */
  private losing = false;
  /** Records dropped past the bound since start. */
  lost = 0;
  private readonly maxPending: number;
  private readonly retryMs: number;
  private readonly intervalMs: number;
  private readonly log: Logger;
  private lastSentAt = -Infinity;

  constructor(
    private readonly accounting: ActorRef<AccountingMsg>,
    opts: UsageBatcherOptions = {},
  ) {
    this.maxPending = opts.maxPending ?? MAX_PENDING;
    this.retryMs = opts.retryMs ?? RETRY_MS;
    this.intervalMs = opts.intervalMs ?? SEND_INTERVAL_MS;
    this.log = opts.log ?? createLogger('usage');
  }

  /** Records waiting to be sent. */
  get waiting(): number {
    return this.pending.length;
  }

  readonly add = (record: UsageRecord): void => {
    this.pending.push(record);
    if (this.pending.length > this.maxPending) this.trim();
    if (!this.inFlight) this.schedule();
  };

  /** The next batch goes at the end of this turn, or once the interval since the last one is up. */
  private schedule(): void {
    if (this.immediate || this.timer !== undefined) return;
    const wait = this.lastSentAt + this.intervalMs - performance.now();
    if (wait <= 0) {
      this.immediate = true;
      setImmediate(this.turn);
      return;
    }
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (!this.inFlight) this.send();
    }, wait);
    this.timer.unref(); // shutdown flushes; a pending batch must not hold up the exit
  }

  /** Sends what is pending now, whether or not a batch is in flight. */
  readonly flush = (): void => {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.send();
  };

  private readonly turn = (): void => {
    this.immediate = false;
    if (!this.inFlight && this.timer === undefined) this.send();
  };

  private send(): void {
    if (this.pending.length === 0) return;
    const records = this.pending;
    if (records.length < this.maxPending / 2) this.losing = false;
    this.pending = [];
    this.inFlight = true;
    this.lastSentAt = performance.now();
    this.accounting.ask({ type: 'records', records }, { timeoutMs: CONFIRM_TIMEOUT_MS }).then(
      () => this.sent(),
      (err: unknown) => {
        const e = LlmgwError.from(err);
        if (e.code === 'LLMGW_ASK_TIMEOUT') return this.sent();
        this.refused(records, e);
      },
    );
  }

  private sent(): void {
    this.inFlight = false;
    this.refusing = false;
    if (this.pending.length > 0) this.schedule();
  }

  /** Keeps a refused batch ahead of what came since, and tries again shortly. */
  private refused(records: UsageRecord[], error: LlmgwError): void {
    this.inFlight = false;
    this.pending = records.concat(this.pending);
    if (this.pending.length > this.maxPending) this.trim();
    if (!this.refusing) this.log.warn('accounting refused usage records; holding them and sending again', { records: records.length, error: error.code });
    this.refusing = true;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.send();
    }, this.retryMs);
    this.timer.unref(); // the servers keep the process alive; a retry must not hold up its exit
  }

  private trim(): void {
    const over = this.pending.length - this.maxPending;
    this.pending.splice(0, over);
    if (!this.losing) this.log.error('usage records lost: the accounting actor has fallen behind by more than the bound; dropping the oldest', { bound: this.maxPending, lostSoFar: this.lost });
    this.losing = true;
    this.lost += over;
  }
}

/** The batcher's backlog and losses, read when Prometheus scrapes. */
export function usageBatcherMetrics(batcher: UsageBatcher): Registry {
  const registry = new Registry();
  new Gauge({
    name: 'llmgw_usage_records_waiting',
    help: 'Usage records held by the data port until the accounting actor takes them',
    registers: [registry],
    collect(this: Gauge) {
      this.set(batcher.waiting);
    },
  });
  new Counter({
    name: 'llmgw_usage_records_lost_total',
    help: 'Usage records dropped because the accounting actor took none for too long',
    registers: [registry],
    collect(this: Counter) {
      this.reset();
      this.inc(batcher.lost);
    },
  });
  return registry;
}
