import type { EndpointState } from '../endpoint-table.js';

/**
 * Prefill pacing for the bands below the first. A free batch slot is not a short step:
 * an engine admits what waits and prefills it in the next step, in one go where it has
 * no per-step token budget, and lower-band refills arrive in cohorts (a wave of
 * completions frees many slots at once). An interactive request sharing that step waits
 * for the whole wave's prefill. So the lower bands' prompt tokens being prefilled —
 * admitted and not yet at their first token — are bounded, and a wave is let in as the
 * previous one reaches its first tokens: each step prefills at most about a budget of
 * lower-band tokens beside the first band's.
 *
 * Counted per model against the budget times the replicas taking traffic, as admission
 * decides before the scheduler picks a replica. A prompt larger than the whole budget
 * still goes when nothing else of the lower bands is being prefilled.
 *
 * Only where some engine needs it (`needsPacing`): an engine whose own per-step budget
 * is known and within ours already bounds each step's prefill, and pacing it as well
 * cost bronze 30–60 % of its throughput in the admission bench, each paced prefill
 * waiting for earlier first tokens to travel back through the gateway.
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

  /** Why a lower-band prompt of `tokens` must wait now, or null when it may go. */
  hold(tokens: number, replicas: number): string | null {
    if (this.tokens === 0) return null;
    const budget = this.perReplica * Math.max(1, replicas);
    if (this.tokens + tokens <= budget) return null;
    return `${this.tokens} prompt tokens of lower bands being prefilled; ${tokens} more would pass the budget of ${budget} (${this.perReplica} per replica)`;
  }

  started(tokens: number): void {
    this.tokens += tokens;
  }

  /** A paced request reached its first token, or ended before it. */
  prefilled(tokens: number): void {
    this.tokens = Math.max(0, this.tokens - tokens);
  }
}

/**
 * Whether admission paces lower-band prefills to `e`: its per-step token budget is
 * unknown, absent (chunked prefill off: all it admits is prefilled in one step) or above
 * `perReplica`.
 */
export function needsPacing(e: EndpointState, perReplica: number): boolean {
  return e.stepBudget === null || e.stepBudget === 0 || e.stepBudget > perReplica;
}
