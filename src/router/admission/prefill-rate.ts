/** First chunks of paced prompts this close together (ms) came out of one engine step: a cohort. */
const COHORT_GAP_MS = 2;
/** Cohorts kept for the fit: at a few a second under a flood, the last several seconds. */
const COHORTS = 32;
/** Cohorts the fit needs. */
const FIT_MIN_COHORTS = 8;
/**
 * Two cohorts give a slope where their sizes differ by this share of the mean size, and
 * by FIT_MIN_TOKEN_GAP tokens, at least; the fit needs FIT_MIN_PAIRS such slopes. A slope
 * read off near-equal sizes is the steps' noise over a few tokens: 256 tokens are ~1 ms
 * on an engine prefilling 232 a ms, about what its steps vary by. Cohorts of a few
 * sixteen-token prompts each, fitted, read 4–12 tokens a ms on engines that prefill 232
 * (admission bench, `vllm short`).
 */
const FIT_MIN_SIZE_GAP = 0.1;
const FIT_MIN_TOKEN_GAP = 256;
const FIT_MIN_PAIRS = 16;
/** The share of those slopes that must be positive: where the steps' noise hides the prompts' cost, about half are. */
const FIT_MIN_POSITIVE = 2 / 3;
/**
 * Paced prompt tokens per replica before the engine's cost of them is known. Small: the
 * first wave of a flood goes before any measurement, and on an engine that prefilled ~13
 * tokens a ms a wave of 4,096 short prompts' tokens was one ~300 ms step, which every
 * interactive request in flight then waited through (traced, admission bench,
 * `host-bound short`). It doubles past each cohort that came back within the time budget.
 */
const SLOW_START_TOKENS = 256;
/** The least cost per prompt token a fit reads (ms): 10,000 tokens a ms, past any engine, where the cohorts lie flat to the last digit. */
const MIN_MS_PER_TOKEN = 1e-4;
/** How far the idle time follows a slower first chunk of an unpaced request: the engine's, so it changes only when the engine does. */
const DRIFT = 0.001;

interface Cohort {
  /** Paced prompt tokens whose first chunks came together. */
  tokens: number;
  /** The latest of their sends (performance.now() ms): the step that prefilled them began after it. */
  lastSent: number;
  /** One of them was sent with no free batch slot by the router's count: it waited for a slot, not only for the prefill. */
  queued: boolean;
  /** The most paced prompt tokens awaiting a first chunk on the engine as one of them was sent, its own included. */
  backlog: number;
  /** Their first and latest first chunk. */
  firstAt: number;
  lastAt: number;
}

/**
 * What an engine's prefill costs, in ms per prompt token, from what the router sees of
 * its own requests — no engine metric is needed, and none of the host's share is in it.
 * The paced lower-band prompts whose first chunks come back together were prefilled in
 * one step: a cohort, of `x` tokens, whose wait `y` runs from the latest of their sends to
 * the first chunk. `y` is the host's round trip, the rest of the step under way, the
 * decodes sharing the step and the prefill, and only the last grows with `x`: the slope
 * of `y` on `x` over the recent cohorts is the engine's time per prompt token. Read as a
 * rate (tokens over the whole wait) it took the decodes and the host into the engine's
 * prefill and read 40 tokens a ms for an engine prefilling 116. The slope is the median
 * of the slopes between pairs of cohorts (Theil–Sen), not a least-squares line: a few
 * cohorts that waited out a long step under way pulled the line, and a least-squares fit
 * read 33–147 tokens a ms for an engine prefilling 232 (admission bench, `batch 64 long
 * varied`). Held that low, the time budget let one long prompt through at a time, every
 * cohort was then one prompt of near the same size, too alike to fit again, and the
 * reading stayed for the rest of the run: over 100 runs of the two batch 64 cells, bronze
 * read a median 0.73 of off, under 0.7 in 17 of 44, where a replica's reading was under
 * 100 tokens a ms, and 0.82, never under 0.7, in the other 56.
 *
 * Prefill pacing bounds the lower bands' prompt tokens being prefilled per replica, and a
 * token count is a very different time on different engines (4,096 tokens are ~70 ms on
 * an 8B model on an H100 and several times that on a slower engine): with the cost
 * known, the budget is also held to a time (`budget`). Until it is known, a slow start:
 * SLOW_START_TOKENS, doubled past the largest cohort that came back within the time.
 */
export class PrefillRate {
  private idle = Infinity;
  private open: Cohort | null = null;
  private readonly cohorts: { x: number; y: number }[] = [];
  /** ms per prompt token from the last fit that could be made (at least MIN_MS_PER_TOKEN); null before one. */
  private slope: number | null = null;

  /** Prompt tokens per ms the engine prefills; null until known. */
  get tokensPerMs(): number | null {
    return this.slope === null ? null : 1 / this.slope;
  }

  /** The engine's idle first chunk, ms (∞ before the first). */
  get idleMs(): number {
    return this.idle;
  }

  /**
   * A request sent to the engine at `sentAt` had its first chunk at `at` (both
   * performance.now() ms); `tokens`: its paced lower-band prompt tokens (0: not paced);
   * `queued`: it was sent with no free batch slot by the router's count; `backlog`: the
   * paced prompt tokens awaiting a first chunk there as it was sent, its own included.
   * A cohort with a member queued, or sent behind more than twice the cohort's prefill,
   * is not fitted: its wait grew with the engine's queue or the prefill ahead of it, not
   * its own size. Under floods sent unpaced (before a first band is in use) the fit read
   * 0.04–10 tokens a ms for engines prefilling 58 and 232 without the first check, and
   * 19 for one of 232 with 64 slots without the second. Paced, the backlog is about the
   * cohort, and its predecessor's first chunks not yet all read.
   */
  firstChunk(sentAt: number, at: number, tokens: number, queued = false, backlog = tokens): void {
    const ms = at - sentAt;
    // A paced first chunk waited for the others of its wave and is no idle one; a flood
    // has hundreds a second, and drifting towards them the idle time rose ~20% per 200.
    if (ms < this.idle) this.idle = ms;
    else if (tokens === 0) this.idle += (ms - this.idle) * DRIFT;
    // Any first chunk after a gap: the open cohort's step has ended.
    if (this.open !== null && at - this.open.lastAt > COHORT_GAP_MS) {
      this.close(this.open);
      this.open = null;
    }
    if (tokens === 0) return;
    const c = this.open;
    if (c === null) {
      this.open = { tokens, lastSent: sentAt, queued, backlog, firstAt: at, lastAt: at };
      return;
    }
    // Sent after the cohort's step had ended: a fast request of its own, not one of it.
    if (sentAt >= c.firstAt) return;
    c.tokens += tokens;
    c.lastSent = Math.max(c.lastSent, sentAt);
    c.queued ||= queued;
    c.backlog = Math.max(c.backlog, backlog);
    c.lastAt = at;
  }

  /**
   * Paced prompt tokens the engine may be prefilling at once: `tokens`, and no more than
   * it prefills in `ms` where the cost is known; else the slow start's. `ms` 0: tokens only.
   */
  budget(tokens: number, ms: number): number {
    if (ms === 0) return tokens;
    if (this.slope !== null) return Math.max(1, Math.min(tokens, Math.floor(ms / this.slope)));
    let grown = SLOW_START_TOKENS;
    for (const c of this.cohorts) if (c.y - this.idle <= ms && 2 * c.x > grown) grown = 2 * c.x;
    return Math.min(tokens, grown);
  }

  /** The engine restarted: it may be back with another model or on other GPUs. */
  reset(): void {
    this.idle = Infinity;
    this.open = null;
    this.cohorts.length = 0;
    this.slope = null;
  }

  private close(c: Cohort): void {
    if (c.queued || c.backlog > 2 * c.tokens) return;
    if (this.cohorts.length === COHORTS) this.cohorts.shift();
    this.cohorts.push({ x: c.tokens, y: c.firstAt - c.lastSent });
    this.slope = fitSlope(this.cohorts) ?? this.slope;
  }
}

/**
 * The median of the slopes between pairs of cohorts whose sizes differ enough (Theil–Sen),
 * or null where the cohorts are too few, too alike in size or too noisy to tell a slope
 * from 0 (fewer than FIT_MIN_POSITIVE of the slopes positive).
 */
function fitSlope(points: readonly { x: number; y: number }[]): number | null {
  const n = points.length;
  if (n < FIT_MIN_COHORTS) return null;
  let sx = 0;
  for (const p of points) sx += p.x;
  const gap = Math.max((FIT_MIN_SIZE_GAP * sx) / n, FIT_MIN_TOKEN_GAP);
  const slopes: number[] = [];
  let positive = 0;
  for (let i = 0; i < n; i++) {
    for (let j = i + 1; j < n; j++) {
      const dx = points[j]!.x - points[i]!.x;
      if (Math.abs(dx) < gap) continue;
      const slope = (points[j]!.y - points[i]!.y) / dx;
      slopes.push(slope);
      if (slope > 0) positive++;
    }
  }
  if (slopes.length < FIT_MIN_PAIRS || positive < FIT_MIN_POSITIVE * slopes.length) return null;
  slopes.sort((a, b) => a - b);
  const mid = slopes.length >> 1;
  const median = slopes.length % 2 === 1 ? slopes[mid]! : (slopes[mid - 1]! + slopes[mid]!) / 2;
  return Math.max(MIN_MS_PER_TOKEN, median);
}
