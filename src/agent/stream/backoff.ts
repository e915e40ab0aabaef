// How long an agent waits before dialling the control plane again. Exponential, so a
// control plane that is down is not hammered; capped, so an agent comes back within
// a bounded time of it returning; and fully jittered (a uniform draw below the
// exponential bound), so a fleet that lost its stream at the same instant, when the
// control plane restarted, does not come back at the same instant and knock it over
// again. Pure: the random source is passed in.

export interface BackoffPolicy {
  /** The bound of the first wait. */
  readonly baseMs: number;
  /** No wait is longer than this, however many attempts failed. */
  readonly maxMs: number;
  /**
   * For `withinMs` after an accepted stream was lost, no wait is longer than `maxMs`
   * either. A lost stream is most often a control plane restarting, which waits for its
   * nodes to report before it places anything: agents that come back within seconds of
   * each other end that wait early, and none is still asleep on a long backoff.
   */
  readonly fast?: { readonly withinMs: number; readonly maxMs: number };
}

export const DEFAULT_BACKOFF: BackoffPolicy = Object.freeze({
  baseMs: 500, // half a second: a control plane that restarts is back within a few
  maxMs: 30_000, // 30 s: an agent is back within half a minute of the control plane
  fast: Object.freeze({ withinMs: 120_000, maxMs: 2_000 }), // a restart of up to 2 min: back within 2 s
});

/**
 * The wait before reconnect attempt `attempt` (0 for the first after a stream ended):
 * uniform in [0, min(maxMs, baseMs × 2^attempt)). `random` returns [0, 1).
 */
export function reconnectDelayMs(attempt: number, policy: BackoffPolicy, random: () => number): number {
  // 2 ** 1100 is Infinity, which min() turns into maxMs: no overflow to guard against.
  const bound = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.max(0, attempt));
  return Math.floor(random() * bound);
}
