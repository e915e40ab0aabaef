// Keeps the agent's stream up: runs a session, and when it ends or fails, waits a
// jittered, growing delay and runs it again, forever, until the signal aborts. A
// session that the control plane accepted resets the delay, so an agent whose stream
// broke after a day of service reconnects at once instead of after its last backoff.
import { setTimeout as sleep } from 'node:timers/promises';
import { DEFAULT_BACKOFF, reconnectDelayMs, type BackoffPolicy } from './backoff.js';

export interface RetryInfo {
  /** 0 for the first retry after an accepted session. */
  readonly attempt: number;
  readonly delayMs: number;
  /** Why the last session ended; undefined when it ended cleanly. */
  readonly error: unknown;
}

export interface ReconnectOptions {
  /**
   * One stream's life: resolves or rejects when it ends. Calls `accepted` once the
   * control plane accepted it (its Registered answer arrived).
   */
  readonly session: (accepted: () => void, signal: AbortSignal) => Promise<void>;
  readonly signal: AbortSignal;
  readonly policy?: BackoffPolicy;
  readonly random?: () => number;
  /** Before each wait: for the log line that says why and for how long. */
  readonly onRetry?: (info: RetryInfo) => void;
}

/** Resolves once `signal` aborts; never rejects (a failed session is retried, not thrown). */
export async function reconnectForever(options: ReconnectOptions): Promise<void> {
  const policy = options.policy ?? DEFAULT_BACKOFF;
  const random = options.random ?? Math.random;
  const now = Date.now;
  let attempt = 0;
  /** When the last accepted stream ended; null before any. */
  let lostAt: number | null = null;
  while (!options.signal.aborted) {
    let wasAccepted = false;
    let error: unknown = undefined;
    try {
      await options.session(() => {
        wasAccepted = true;
      }, options.signal);
    } catch (err) {
      error = err;
    }
    if (options.signal.aborted) return;
    if (wasAccepted) {
      attempt = 0;
      lostAt = now();
    }
    const fast = policy.fast && lostAt !== null && now() - lostAt < policy.fast.withinMs;
    const delayMs = reconnectDelayMs(attempt, fast ? { baseMs: policy.baseMs, maxMs: Math.min(policy.maxMs, policy.fast!.maxMs) } : policy, random);
    options.onRetry?.({ attempt, delayMs, error });
    attempt++;
    try {
      await sleep(delayMs, undefined, { signal: options.signal });
    } catch {
      return; // aborted while waiting
    }
  }
}
