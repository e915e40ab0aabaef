// Time for the simulated engine. The engine never reads the wall clock or sets timers
// itself: it asks an EngineClock. The real one runs on performance.now() and Node timers;
// ManualClock lets specs step an engine through simulated time deterministically,
// without waiting and without flakiness.

export interface EngineClock {
  /** Monotonic milliseconds. */
  now(): number;
  /** Calls `fn` once, `delayMs` from now (≤ 0: as soon as possible). Returns a cancel function. */
  schedule(fn: () => void, delayMs: number): () => void;
}

/**
 * performance.now() and Node timers. setTimeout has a ~1 ms granularity, so a wait under
 * 1 ms is a setImmediate instead: otherwise a high `--speed` (steps of tens of µs) would be
 * throttled to one step per timer tick. The engine re-checks the time when called back,
 * so an early immediate never ends a step before its simulated duration has passed.
 */
export const realClock: EngineClock = {
  now: () => performance.now(),
  schedule(fn, delayMs) {
    if (delayMs >= 1) {
      const t = setTimeout(fn, Math.floor(delayMs));
      return () => clearTimeout(t);
    }
    const i = setImmediate(fn);
    return () => clearImmediate(i);
  },
};

interface ManualTimer {
  at: number;
  order: number;
  fn: () => void;
  cancelled: boolean;
}

/** A clock that only moves when told to: for driving an engine in-process in specs. */
export class ManualClock implements EngineClock {
  private t: number;
  private order = 0;
  private timers: ManualTimer[] = [];

  constructor(startMs = 0) {
    this.t = startMs;
  }

  now(): number {
    return this.t;
  }

  schedule(fn: () => void, delayMs: number): () => void {
    const timer: ManualTimer = { at: this.t + Math.max(0, delayMs), order: this.order++, fn, cancelled: false };
    this.timers.push(timer);
    return () => {
      timer.cancelled = true;
    };
  }

  /** Timers not yet run or cancelled. */
  get pending(): number {
    return this.timers.filter((x) => !x.cancelled).length;
  }

  /** Moves time forward by `ms`, running every timer that falls due on the way, in order. */
  advance(ms: number): void {
    const until = this.t + ms;
    for (let next = this.next(); next && next.at <= until; next = this.next()) this.fire(next);
    this.t = until;
  }

  /** Runs timers in time order until none are left; returns how many ran. */
  runUntilIdle(maxTimers = 1_000_000): number {
    let ran = 0;
    for (let next = this.next(); next; next = this.next()) {
      if (++ran > maxTimers) throw new Error(`ManualClock: more than ${maxTimers} timers; is something rescheduling forever?`);
      this.fire(next);
    }
    return ran;
  }

  private next(): ManualTimer | undefined {
    this.timers = this.timers.filter((x) => !x.cancelled);
    let best: ManualTimer | undefined;
    for (const x of this.timers) if (!best || x.at < best.at || (x.at === best.at && x.order < best.order)) best = x;
    return best;
  }

  private fire(timer: ManualTimer): void {
    timer.cancelled = true;
    if (timer.at > this.t) this.t = timer.at;
    timer.fn();
  }
}
