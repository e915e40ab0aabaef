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
 * allowance priced as tokens. A gpu_seconds request's duration is unknown beforehand,
 * so it is priced at `perToken`, the GPU-seconds per token its model has cost lately
 * (GpuSecondRates); 0 until one of its requests has been billed.
 */
export function estimateOf(units: UnitsConfig, promptTokens: number, completionTokens: number, perToken = 0): number {
  if (units === 'gpu_seconds') return perToken * (promptTokens + completionTokens);
  return priceOf(units, { promptTokens, completionTokens, cachedTokens: 0 }, null);
}

/** How much the latest request moves a model's rate: about the last twenty count. */
const RATE_WEIGHT = 0.05;

/**
 * GPU-seconds per token, per model, as an exponentially weighted mean of what its
 * billed requests cost: what a gpu_seconds request reserves on its budgets, so that
 * concurrent requests cannot overshoot a budget by more than they were estimated at.
 */
export class GpuSecondRates {
  private readonly rates = new Map<string, number>();

  /** GPU-seconds per token of `model`; 0 while none of its requests was billed. */
  of(model: string): number {
    return this.rates.get(model) ?? 0;
  }

  /** A billed request of `model` that cost `units` GPU-seconds for `tokens` tokens. */
  observe(model: string, units: number, tokens: number): void {
    if (!(tokens > 0) || !(units >= 0)) return;
    const rate = units / tokens;
    const was = this.rates.get(model);
    this.rates.set(model, was === undefined ? rate : was + RATE_WEIGHT * (rate - was));
  }
}
