import type { AdmissionConfig } from '../../config/types.js';
import type { LlmgwError } from '../../errors.js';
import type { EndpointTable } from '../endpoint-table.js';
import { AdmissionQueue, type Ticket } from './admission-queue.js';
import { saturation, type Saturation } from './saturation.js';

/**
 * Admission control for one model. The data port asks `tryAdmit` on every request: when
 * nothing waits and the engines are not saturated, the answer is yes and costs a loop
 * over the model's endpoints; otherwise the request queues and `wait` resolves when it
 * is released — as capacity frees (a request of the model completes, a new scrape shows
 * room, the periodic tick), highest band first.
 */
export class Admission {
  readonly queue: AdmissionQueue;
  /** Released but not yet in flight: counted as load so one release does not become many. */
  private inTransit = 0;

  constructor(
    readonly model: string,
    private readonly table: EndpointTable,
    private readonly cfg: AdmissionConfig,
    private readonly staleAfterMs: number,
  ) {
    this.queue = new AdmissionQueue(model, cfg.bands, cfg.aging_ms, cfg.max_queued);
  }

  /** Why the model counts as saturated now, or null. */
  saturated(now: number): Saturation {
    return saturation(this.table.forModel(this.model), this.cfg, now, this.staleAfterMs, this.inTransit);
  }

  /** True when the request may go now (and it is counted as admitted). */
  tryAdmit(band: number, now: number): boolean {
    if (this.queue.length > 0 || this.saturated(now) !== null) return false;
    this.queue.admittedDirectly(band);
    return true;
  }

  /**
   * Queues a request; resolves when it is released, rejects with LLMGW_QUEUE_FULL or
   * LLMGW_QUEUE_TIMEOUT. `signal` aborting (the client left) removes it at once.
   */
  wait(band: number, now: number, signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        if (this.queue.cancel(ticket)) resolve(); // the caller sees the abort and answers nobody
      };
      const ticket: Ticket = {
        band,
        enqueuedAt: now,
        settle: (err: LlmgwError | null) => {
          signal.removeEventListener('abort', onAbort);
          if (err) return reject(err);
          this.inTransit++;
          resolve();
        },
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.queue.push(ticket);
    });
  }

  /** A released request is now in flight (or gave up): it counts through `inflight` from here. */
  dispatched(): void {
    if (this.inTransit > 0) this.inTransit--;
  }

  /** Releases queued requests while there is room; expires those past their timeout. */
  release(now: number): void {
    if (this.queue.length === 0) return;
    this.queue.expire(now);
    while (this.queue.length > 0 && this.saturated(now) === null) this.queue.next(now)!.settle(null);
  }
}
