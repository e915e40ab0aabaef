// Passive health of one endpoint, from the outcomes of real requests: a short cooldown
// after a few consecutive failures, and a circuit breaker after more. Active health
// (the poller's /health and /v1/models) answers "is it up"; this answers "is it
// working", which a process that accepts connections and then fails every request
// does not pass.

export type BreakerState = 'closed' | 'open' | 'half-open';

export interface HealthPolicy {
  cooldownFailures: number;
  cooldownMs: number;
  breakerFailures: number;
  openMs: number;
  maxOpenMs: number;
}

/** Numeric breaker states for the `llmgw_endpoint_breaker_state` gauge. */
export const BREAKER_GAUGE: Record<BreakerState, number> = { closed: 0, 'half-open': 1, open: 2 };

export class EndpointHealth {
  private failures = 0;
  private state: BreakerState = 'closed';
  private openUntil = 0;
  private cooldownUntil = 0;
  private openFor: number;
  /** Whether the one trial request of a half-open breaker is out. */
  private trialOut = false;

  constructor(
    private readonly policy: HealthPolicy,
    private readonly onChange: (from: BreakerState, to: BreakerState) => void = () => {},
  ) {
    this.openFor = policy.openMs;
  }

  /** Why the endpoint may not take a request now, or null. Reads only: nothing changes. */
  blocked(now: number): string | null {
    const state = this.breakerAt(now);
    if (state === 'open') return `circuit breaker open for ${Math.ceil((this.openUntil - now) / 1000)} s more after ${this.failures} failures`;
    if (state === 'half-open' && this.trialOut) return 'circuit breaker half-open, its trial request is in flight';
    if (now < this.cooldownUntil) return `cooling down for ${this.cooldownUntil - now} ms after ${this.failures} failures`;
    return null;
  }

  /**
   * The breaker as it stands at `now`: an open breaker whose pause is over is half-open
   * (it becomes so for real when the trial request is sent).
   */
  breakerAt(now: number): BreakerState {
    return this.state === 'open' && now >= this.openUntil ? 'half-open' : this.state;
  }

  /** A request is being sent to the endpoint. */
  begin(now: number): void {
    if (this.breakerAt(now) !== 'half-open') return;
    this.move('half-open');
    this.trialOut = true;
  }

  succeeded(): void {
    this.failures = 0;
    this.cooldownUntil = 0;
    this.trialOut = false;
    if (this.state !== 'closed') {
      this.openFor = this.policy.openMs;
      this.move('closed');
    }
  }

  failed(now: number): void {
    this.failures++;
    this.trialOut = false;
    if (this.state === 'half-open') {
      // The trial failed: open again, for longer each time, so a dead endpoint costs
      // one request per (growing) pause rather than one per pause forever.
      this.openFor = Math.min(this.openFor * 2, this.policy.maxOpenMs);
      return this.trip(now);
    }
    if (this.state === 'closed' && this.failures >= this.policy.breakerFailures) return this.trip(now);
    if (this.failures >= this.policy.cooldownFailures) this.cooldownUntil = now + this.policy.cooldownMs;
  }

  /** A request ended without telling us anything about the endpoint (the client left). */
  abandoned(): void {
    this.trialOut = false;
  }

  get consecutiveFailures(): number {
    return this.failures;
  }

  private trip(now: number): void {
    this.openUntil = now + this.openFor;
    this.move('open');
  }

  private move(to: BreakerState): void {
    const from = this.state;
    if (from === to) return;
    this.state = to;
    this.onChange(from, to);
  }
}
