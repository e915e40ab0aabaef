// Supervision is a small closed set of decisions, as in Erlang/Akka: an actor that
// fails is restarted with fresh state after a backoff; one that keeps failing inside a
// window is escalated to its parent, which decides. A failure is never swallowed.

export type SupervisorDecision = 'restart' | 'stop' | 'escalate';

export interface SupervisionPolicy {
  /** Restarts allowed inside `withinMs` before the failure is escalated. */
  maxRestarts: number;
  withinMs: number;
  /** First restart waits `backoffInitialMs`, doubling up to `backoffMaxMs`. */
  backoffInitialMs: number;
  backoffMaxMs: number;
}

export const defaultSupervision: SupervisionPolicy = Object.freeze({
  maxRestarts: 5,
  withinMs: 60_000, // 1 minute
  backoffInitialMs: 10,
  backoffMaxMs: 5_000,
});

/** What a parent learns when a child has used up its restarts. */
export interface ChildFailure {
  child: string;
  kind: string;
  thread: string;
  restarts: number;
  error: { code: string; message: string };
}

/**
 * Tracks failure times for one actor and answers "restart after how long, or escalate?".
 * Pure apart from the clock passed in, so its rules are unit-testable.
 */
export class RestartTracker {
  private recent: number[] = [];

  constructor(private readonly policy: SupervisionPolicy) {}

  /** Records a failure at `now`; returns the backoff in ms, or null to escalate. */
  onFailure(now: number): number | null {
    this.recent = this.recent.filter((t) => now - t < this.policy.withinMs);
    if (this.recent.length >= this.policy.maxRestarts) return null;
    this.recent.push(now);
    const exp = this.policy.backoffInitialMs * 2 ** (this.recent.length - 1);
    return Math.min(exp, this.policy.backoffMaxMs);
  }

  /** Forgets past failures (a parent chose to give the child a fresh start). */
  reset(): void {
    this.recent = [];
  }
}
