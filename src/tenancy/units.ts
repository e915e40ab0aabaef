import type { UnitsConfig } from '../config/types.js';

// What a request costs in its model's units (`models[].units`).
//
// GPU-seconds are an approximation: an engine batches the requests it runs at once,
// so a request is charged the endpoint's GPUs × its own duration ÷ the requests the
// router had in flight to that endpoint when it ended (itself included). The router's
// own count is exact and always current where the engine's scraped load is neither;
// requests from other routers to the same engine are not seen, which overcharges.

export interface Consumed {
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
}

export interface Served {
  /** GPUs of the endpoint that served. */
  gpus: number;
  /** Arrival to the last byte, ms. */
  durationMs: number;
  /** Requests the router had in flight to the endpoint, this one included (≥ 1). */
  concurrent: number;
}

/** The cost of `used` tokens on a model priced by `units`; `served` is needed for gpu_seconds only (without it, 0). */
export function priceOf(units: UnitsConfig, used: Consumed, served: Served | null): number {
  if (units === 'tokens') return used.promptTokens + used.completionTokens;
  if (units === 'gpu_seconds') return served ? (served.gpus * served.durationMs) / 1000 / Math.max(1, served.concurrent) : 0;
  const p = units.per_million;
  const cached = Math.min(used.cachedTokens, used.promptTokens);
  return ((used.promptTokens - cached) * p.prompt + cached * p.cached + used.completionTokens * p.completion) / 1_000_000;
}

/**
 * What to reserve for a request before it runs: its prompt estimate and its completion
 * allowance priced as tokens. A gpu_seconds model reserves nothing, its duration being
 * unknown beforehand: its budgets are held only to what requests have spent.
 */
export function estimateOf(units: UnitsConfig, promptTokens: number, completionTokens: number): number {
  if (units === 'gpu_seconds') return 0;
  return priceOf(units, { promptTokens, completionTokens, cachedTokens: 0 }, null);
}
