import type { EndpointState } from '../endpoint-table.js';

/**
 * Prefill pacing for the bands below the first. A free batch slot is not a short step:
 * an engine admits what waits and prefills it in the next step, in one go where it has
 * no per-step token budget, and lower-band refills arrive in cohorts (a wave of
 * completions frees many slots at once). An interactive request sharing that step waits
 * for the whole wave's prefill. So the lower bands' prompt tokens being prefilled —
 * admitted and not yet at their first token — are bounded, and a wave is let in as the
 * previous one reaches its first tokens.
 *
 * Counted per model against the sum of the replicas' budgets (`pacingBudget`), as
 * admission decides before the scheduler picks a replica, and per replica where the
 * first token is seen (`replicaHasRoom`; the scheduler's `keepLeastPrefilling`). A
 * prompt larger than the whole budget still goes when nothing else of the lower bands is
 * being prefilled.
 */
export class PrefillPacing {
  /** Prompt tokens of lower-band requests admitted and not yet at their first token. */
  private tokens = 0;

  constructor(
    /** Prompt tokens per replica; 0: no pacing. */
    private readonly perReplica: number,
  ) {}

  /** Whether requests of `band` are paced (the first band never is). */
  paces(band: number): boolean {
    return band > 0 && this.perReplica > 0;
  }

  /** Why a lower-band prompt of `tokens` must wait now, or null when it may go; `budget`: the replicas' `pacingBudget`s summed. */
  hold(tokens: number, budget: number): string | null {
    if (this.tokens === 0 || this.tokens + tokens <= budget) return null;
    return `${this.tokens} prompt tokens of lower bands being prefilled; ${tokens} more would pass the budget of ${budget} across the replicas taking traffic`;
  }

  started(tokens: number): void {
    this.tokens += tokens;
  }

  /** A paced request reached its first token, or ended before it. */
  prefilled(tokens: number): void {
    this.tokens = Math.max(0, this.tokens - tokens);
  }
}

/** What bounds the lower bands' prefill per replica: `router.admission.prefill_tokens_per_replica` and `prefill_ms_per_replica`. */
export interface PacingLimits {
  /** Prompt tokens per replica; 0: no pacing. */
  tokens: number;
  /** Ms of the engine's prefill per replica, at its measured cost (`EndpointState.prefill`); 0: tokens only. */
  ms: number;
}

/**
 * Lower-band prompt tokens `e` may be prefilling at once: `limits.tokens`, or twice its own
 * per-step budget where that is smaller, and no more than it prefills in `limits.ms`
 * (`prefill-rate.ts`; a slow start until that is known): a token budget sized for one
 * engine is a long step on a slower one. A first-band prompt arriving waits for the
 * step under way and shares the next with what is queued: with the step budget left to
 * the engine, a flood meeting 56 free slots per engine put as many 1,400–1,900-token
 * prompts in each at once, and platinum waited ~11 steps (p99 420–600 ms, 25 alone, in
 * the admission bench). Twice a small budget: one step's prefill under way and the
 * next one's already there, so the engine never waits for a first token to travel back
 * through the gateway. Where its budget is unknown or none (chunked prefill off), the
 * engine prefills all it admits in one step, and `limits.tokens` bounds that step.
 */
export function pacingBudget(e: Pick<EndpointState, 'stepBudget' | 'prefill'>, limits: PacingLimits): number {
  const own = e.stepBudget;
  const tokens = own === null || own === 0 ? limits.tokens : Math.min(limits.tokens, 2 * own);
  return e.prefill.budget(tokens, limits.ms);
}

/**
 * Whether a lower-band prompt of `tokens` fits `e`'s own budget beside the paced prompts
 * awaiting a first token there (`EndpointState.lowerPrefilling`); one larger than the
 * budget fits an engine prefilling none. The model-wide count above spans the
 * replicas; this keeps one replica from taking two replicas' share while another is
 * kept clear for a first-band prompt (`firstBandPrefilling`) or simply picked less.
 */
export function replicaHasRoom(e: Pick<EndpointState, 'stepBudget' | 'prefill' | 'lowerPrefilling'>, tokens: number, limits: PacingLimits): boolean {
  return e.lowerPrefilling === 0 || e.lowerPrefilling + tokens <= pacingBudget(e, limits);
}
