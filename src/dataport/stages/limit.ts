import type { ServerResponse } from 'node:http';
import type { AdmissionConfig, UnitsConfig } from '../../config/types.js';
import { LlmgwError } from '../../errors.js';
import type { Profile } from '../../router/scheduler/types.js';
import type { RateState, RateVerdict } from '../../tenancy/rate-limiter.js';
import type { ModelRoute } from '../model-routes.js';
import type { Stage } from '../pipeline.js';
import { promptTokensOf } from '../prompt.js';
import { refuse } from '../refuse.js';
import type { TenancyGate } from '../tenancy-gate.js';

/**
 * What a request without max_tokens is taken to complete, in tokens, when reserving its
 * tokens per minute and its budget: a typical chat answer. Its real count corrects both.
 */
export const DEFAULT_COMPLETION_TOKENS = 256;

export interface LimitInputs {
  gate: TenancyGate;
  /** Every name and alias a client may use → its route (the budget fallback is one). */
  routes: ReadonlyMap<string, ModelRoute>;
  profiles: ReadonlyMap<string, Profile>;
  admission: AdmissionConfig;
}

/**
 * The key's chain decides, after resolve: the model must be allowed on every level
 * (403), the requests and tokens per minute must be left on every level (429 with
 * Retry-After), and a spent budget sends the request to the free fallback model, or
 * refuses it (429 insufficient_quota). The key's band and routing profile win over the
 * request's own. What passes reserves its tokens and its estimated cost, settled when
 * it is billed (`tenancy-gate.ts`).
 */
export function limitStage(i: LimitInputs): Stage {
  const bandIndex = new Map(i.admission.bands.map((b, k) => [b.name, k]));
  const bandNames = i.admission.bands.map((b) => b.name);
  const defaultBand = i.admission.default_band ?? bandNames[Math.max(0, bandNames.length - 2)]!;
  const fallbackName = i.gate.settings.budget_fallback;

  return {
    name: 'limit',
    async run(ctx, next) {
      const t = ctx.tenant!;
      const { limits } = t.view;
      const { record, res } = ctx;
      if (limits.models !== null && !limits.models.has(ctx.route.entry.name)) {
        return refuse(ctx, new LlmgwError('LLMGW_MODEL_NOT_ALLOWED', `this API key may not use the model '${record.modelAsked}'; allowed: ${[...limits.models].join(', ') || 'none'}`), 'model');
      }
      const now = Date.now();
      const promptTokens = promptTokensOf(ctx);
      const completionTokens = ctx.path === '/v1/embeddings' ? 0 : completionAllowance(ctx.body);

      let units: UnitsConfig | null = i.gate.unitsOf(ctx.route.entry.name);
      const spent = i.gate.budgets.exhausted(limits.levels, now);
      if (spent) {
        const fallback = fallbackName === undefined ? undefined : i.routes.get(fallbackName);
        const where = `${spent.level.scope} ${spent.level.id}`;
        if (!fallback) {
          return refuse(ctx, new LlmgwError('LLMGW_BUDGET_EXCEEDED', `the ${spent.period}ly budget of ${where} is spent (${round(spent.spent)} of ${spent.budget} units)`));
        }
        // Served by the fallback, free: the spent budget is not charged further.
        ctx.route = fallback;
        ctx.raw = Buffer.alloc(0);
        units = null;
      }

      const { verdict, hold } = i.gate.limiter.admit(limits.levels, promptTokens + completionTokens, now);
      setRateHeaders(res, verdict);
      if (!verdict.ok) {
        const waitS = Math.max(1, Math.ceil(verdict.retryAfterMs / 1000));
        const which = verdict.kind === 'requests' ? `requests per minute (${verdict.level.rpm})` : `tokens per minute (${verdict.level.tpm})`;
        return refuse(ctx, new LlmgwError('LLMGW_RATE_LIMITED', `the ${which} of ${verdict.level.scope} ${verdict.level.id} are used up; retry in ${waitS} s`), null, { 'retry-after': String(waitS) });
      }
      t.rate = hold;
      t.units = units;
      t.budget = i.gate.budgets.reserve(limits.levels, i.gate.estimate(units, ctx.route.entry.name, promptTokens, completionTokens));

      const profile = limits.profile === null ? undefined : i.profiles.get(limits.profile);
      if (profile) {
        ctx.profile = profile;
        record.profile = profile.name;
      }
      const resolved = record.band !== null && bandIndex.has(record.band) ? record.band : null;
      ctx.band = -1;
      record.band = null;
      if (ctx.route.admission) {
        // The key's band first, then what resolve chose, then the default (the fallback may admit where the asked model did not).
        const name = (limits.band !== null && bandIndex.has(limits.band) ? limits.band : null) ?? profile?.band ?? resolved ?? defaultBand;
        ctx.band = bandIndex.get(name) ?? bandIndex.get(defaultBand)!;
        record.band = bandNames[ctx.band]!;
      }
      return next();
    },
  };
}

function completionAllowance(body: Record<string, unknown>): number {
  const asked = body.max_completion_tokens ?? body.max_tokens;
  return typeof asked === 'number' && Number.isFinite(asked) && asked > 0 ? asked : DEFAULT_COMPLETION_TOKENS;
}

/** OpenAI's rate-limit headers, on refusals and on the answers that pass alike. */
function setRateHeaders(res: ServerResponse, v: RateVerdict): void {
  put(res, 'requests', v.requests);
  put(res, 'tokens', v.tokens);
}

function put(res: ServerResponse, kind: 'requests' | 'tokens', s: RateState): void {
  if (s.limit === null) return;
  res.setHeader(`x-ratelimit-limit-${kind}`, String(s.limit));
  res.setHeader(`x-ratelimit-remaining-${kind}`, String(s.remaining));
  res.setHeader(`x-ratelimit-reset-${kind}`, duration(s.resetMs));
}

/** A duration as OpenAI writes it: `20ms`, `6s`, `1m30s`. */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.ceil(ms)}ms`;
  const s = Math.ceil(ms / 1000);
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${s % 60}s`;
}

const round = (x: number): number => Math.round(x * 1000) / 1000;
