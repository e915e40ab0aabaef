/** First chunks of paced prompts this close together (ms) came out of one engine step: a cohort. */
const COHORT_GAP_MS = 2;
/** Cohorts kept for the fit: at a few a second under a flood, the last several seconds. */
const COHORTS = 32;
/** Cohorts the fit needs, and how varied their sizes (the standard deviation over the mean): a slope read off one size is noise. */
const FIT_MIN_COHORTS = 8;
const FIT_MIN_SPREAD = 0.25;
/**
 * How many standard errors the slope must stand clear of 0. Short prompts on a fast
 * engine cost a ms or two against steps that vary by more: fitted anyway, sixteen-token
 * cohorts read 5–26 tokens a ms on engines that prefill 232.
 */
const FIT_MIN_T = 3;
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
 * of a least-squares line through the recent cohorts is the engine's time per prompt
 * token. Read as a rate (tokens over the whole wait) it took the decodes and the host
 * into the engine's prefill and read 40 tokens a ms for an engine prefilling 116.
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

/** The least-squares slope of y on x, or null where the cohorts are too few, too alike in size or too noisy to tell one from 0. */
function fitSlope(points: readonly { x: number; y: number }[]): number | null {
  const n = points.length;
  if (n < FIT_MIN_COHORTS) return null;
  let sx = 0;
  let sy = 0;
  for (const p of points) {
    sx += p.x;
    sy += p.y;
  }
  const mx = sx / n;
  const my = sy / n;
  let vxx = 0;
  let vxy = 0;
  for (const p of points) {
    vxx += (p.x - mx) ** 2;
    vxy += (p.x - mx) * (p.y - my);
  }
  if (vxx / n < (FIT_MIN_SPREAD * mx) ** 2) return null;
  const slope = vxy / vxx;
  let residuals = 0;
  for (const p of points) residuals += (p.y - my - slope * (p.x - mx)) ** 2;
  const se = Math.sqrt(residuals / (n - 2) / vxx);
  if (slope < FIT_MIN_T * se) return null;
  return Math.max(MIN_MS_PER_TOKEN, slope);
}
