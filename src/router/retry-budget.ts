/**
 * How many retries may be in flight at once, as a share of the requests in flight (in
 * the manner of Envoy's retry budget). A per-request attempt limit alone lets a
 * fleet-wide fault triple the load exactly when the fleet can take least; a budget
 * keeps retries for the occasional failure and stops them during an outage. A floor
 * (`minConcurrency`) keeps a quiet gateway retrying.
 */
export class RetryBudget {
  private active = 0;
  private retrying = 0;

  constructor(
    private readonly percent: number,
    private readonly minConcurrency: number,
  ) {}

  /** A request started routing; call `left` when it ends. */
  entered(): void {
    this.active++;
  }

  left(): void {
    if (this.active > 0) this.active--;
  }

  /** Takes a retry slot when the budget has one; the caller gives it back with `retryEnded`. */
  tryRetry(): boolean {
    if (this.retrying >= this.limit()) return false;
    this.retrying++;
    return true;
  }

  retryEnded(): void {
    if (this.retrying > 0) this.retrying--;
  }

  /** Retries allowed in flight now. */
  limit(): number {
    return Math.max(this.minConcurrency, Math.floor((this.active * this.percent) / 100));
  }

  get inFlight(): { requests: number; retries: number } {
    return { requests: this.active, retries: this.retrying };
  }
}
