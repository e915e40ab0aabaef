import { LlmgwError } from '../errors.js';
import type { LimitRow, Limits, ScopeKind } from '../messages/tenancy.js';

// One level's limits as a mutation changes them: a partial update (absent keeps, null
// clears) checked as a whole, so that no backend stores a budget without its period.

const FIELDS = ['rpm', 'tpm', 'budget', 'period', 'models', 'band', 'profile'] as const satisfies readonly (keyof Limits)[];
const NONE: Limits = { rpm: null, tpm: null, budget: null, period: null, models: null, band: null, profile: null };

/** The fields `patch` sets, absent and undefined ones left out: what the audit records. */
export function limitsPatch(patch: Partial<Limits>): Partial<Limits> {
  const set: Partial<Limits> = {};
  for (const f of FIELDS) if (patch[f] !== undefined) (set as Record<string, unknown>)[f] = patch[f];
  return set;
}

/** `current` (none: no limits yet) with `patch` applied; LLMGW_INVALID_REQUEST naming the field when the result is not a valid set. */
export function applyLimits(scope: ScopeKind, scopeId: string, current: LimitRow | null, patch: Partial<Limits>): LimitRow {
  const row: LimitRow = { ...(current ?? { ...NONE, scope, scopeId }), ...limitsPatch(patch) };
  checkLimits(row);
  return row;
}

function checkLimits(l: Limits): void {
  const bad = (field: string, why: string): never => {
    throw new LlmgwError('LLMGW_INVALID_REQUEST', `limits: ${field} ${why}`, { field });
  };
  for (const f of ['rpm', 'tpm'] as const) {
    const v = l[f];
    if (v !== null && !(Number.isInteger(v) && v > 0)) bad(f, `must be a positive integer or null, got ${String(v)}`);
  }
  if (l.budget !== null && !(typeof l.budget === 'number' && Number.isFinite(l.budget) && l.budget >= 0)) bad('budget', `must be a number of units ≥ 0 or null, got ${String(l.budget)}`);
  if (l.period !== null && l.period !== 'day' && l.period !== 'month') bad('period', `must be 'day' or 'month', got '${String(l.period)}'`);
  if (l.budget !== null && l.period === null) bad('budget', "needs a period ('day' or 'month')");
  if (l.models !== null && !(Array.isArray(l.models) && l.models.every((m) => typeof m === 'string' && m !== ''))) bad('models', 'must be a list of model names or null');
}

