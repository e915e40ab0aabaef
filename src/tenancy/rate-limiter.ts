import type { LevelCounters, LevelStates } from './level-counters.js';
import type { Level } from './limits.js';

// Requests and tokens per minute per level, by GCRA (the generic cell rate algorithm):
// each counter is one number, the time at which it would be empty again (its
// "theoretical arrival time"), so a check is a subtraction and the reset and
// retry-after it reports are exact, where a fixed window would let twice the limit
// through across a window's edge. A limit of N per minute lets N through at once,
// then one every 60/N s.
//
// Tokens are reserved at admission (max_tokens and a prompt estimate) and corrected
// when the request settles, so a burst of long requests is held back before it runs,
// not only after.

const MINUTE_MS = 60_000;

export type RateKind = 'requests' | 'tokens';

/** What one check found, for the `x-ratelimit-*` headers of the answer. */
export interface RateState {
  /** The most restrictive limit on the chain; null: none set. */
  limit: number | null;
  /** What is left of it after this request. */
  remaining: number;
  /** Until the counter that binds is full again, ms. */
  resetMs: number;
}

export type RateVerdict =
  | { ok: true; requests: RateState; tokens: RateState }
  | { ok: false; kind: RateKind; level: Level; retryAfterMs: number; requests: RateState; tokens: RateState };

/** A request's tokens reserved on its levels, corrected at settle. */
export interface TokenHold {
  readonly levels: readonly Level[];
  tokens: number;
}

export class RateLimiter {
  constructor(private readonly states: LevelStates) {}

  /**
   * Takes one request and `tokens` from every level that sets a limit, or nothing when
   * any of them is used up. Returns the hold to correct once the real count is known.
   */
  admit(levels: readonly Level[], tokens: number, now: number): { verdict: RateVerdict; hold: TokenHold | null } {
    for (const level of levels) {
      if (level.rpm === null && level.tpm === null) continue;
      const c = (level.counters ??= this.states.of(level.id));
      if (level.rpm !== null) {
        const wait = waitFor(c.requestsTat, now, 1, level.rpm);
        if (wait > 0) return { verdict: refusal('requests', level, wait, levels, now), hold: null };
      }
      if (level.tpm !== null) {
        const wait = waitFor(c.tokensTat, now, tokens, level.tpm);
        if (wait > 0) return { verdict: refusal('tokens', level, wait, levels, now), hold: null };
      }
    }
    const requests = blank();
    const tokenState = blank();
    for (const level of levels) {
      const c = level.counters;
      if (!c) continue;
      if (level.rpm !== null) note(requests, level.rpm, (c.requestsTat = Math.max(c.requestsTat, now) + MINUTE_MS / level.rpm), now);
      if (level.tpm !== null) note(tokenState, level.tpm, (c.tokensTat = Math.max(c.tokensTat, now) + (tokens * MINUTE_MS) / level.tpm), now);
    }
    return { verdict: { ok: true, requests, tokens: tokenState }, hold: { levels, tokens } };
  }

  /** The request used `tokens` in the end: the levels are charged the difference from what was reserved. */
  settle(hold: TokenHold, tokens: number, now: number): void {
    const delta = tokens - hold.tokens;
    hold.tokens = tokens;
    if (delta === 0) return;
    for (const level of hold.levels) {
      if (level.tpm === null || !level.counters) continue;
      // Never before now: what a request did not use is no credit for a later minute.
      level.counters.tokensTat = Math.max(now, level.counters.tokensTat + (delta * MINUTE_MS) / level.tpm);
    }
  }
}

function refusal(kind: RateKind, level: Level, retryAfterMs: number, levels: readonly Level[], now: number): RateVerdict {
  const requests = blank();
  const tokens = blank();
  for (const l of levels) {
    const c: LevelCounters | null = l.counters;
    if (l.rpm !== null) note(requests, l.rpm, c?.requestsTat ?? now, now);
    if (l.tpm !== null) note(tokens, l.tpm, c?.tokensTat ?? now, now);
  }
  return { ok: false, kind, level, retryAfterMs, requests, tokens };
}

/** How long until `cost` more fits under `limit` per minute; 0: it fits now. */
function waitFor(tat: number, now: number, cost: number, limit: number): number {
  // A request larger than a whole minute's allowance goes when the counter is empty, rather than never.
  const increment = (Math.min(cost, limit) * MINUTE_MS) / limit;
  const wait = Math.max(tat, now) + increment - now - MINUTE_MS;
  // Below a microsecond is float error in summing N increments of 60000/N, not a wait.
  return wait > 1e-3 ? wait : 0;
}

function blank(): RateState {
  return { limit: null, remaining: Infinity, resetMs: 0 };
}

/** Folds one level's counter into the chain's state: the smallest limit, the least left, the longest reset. */
function note(state: RateState, limit: number, tat: number, now: number): void {
  const used = Math.max(0, tat - now);
  // The epsilon keeps float error from turning 4 left into 3.999….
  const remaining = Math.max(0, Math.floor(((MINUTE_MS - used) * limit) / MINUTE_MS + 1e-9));
  state.limit = state.limit === null ? limit : Math.min(state.limit, limit);
  if (remaining < state.remaining) state.remaining = remaining;
  if (used > state.resetMs) state.resetMs = used;
}
