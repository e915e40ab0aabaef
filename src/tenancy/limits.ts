import type { BudgetPeriod, Limits, ScopeKind } from '../messages/tenancy.js';
import type { LevelCounters } from './level-counters.js';

// What a request is held to: every level on its key's chain (key → project → team →
// org) keeps its own counters, so a project's rpm is shared by all of its keys. The
// resolved view names each level that sets something, and the most restrictive value
// of each setting for what one answer reports (the rate-limit headers, the models).

/** One level of a chain and what it sets. */
export interface Level {
  scope: ScopeKind;
  id: string;
  rpm: number | null;
  tpm: number | null;
  budget: number | null;
  period: BudgetPeriod | null;
  /** A cache slot: the level's counters, filled on first use (`level-counters.ts`). */
  counters: LevelCounters | null;
}

export interface EffectiveLimits {
  /** The smallest rpm set along the chain; null: none. */
  rpm: number | null;
  tpm: number | null;
  /** The models every level allows (the intersection); null: all. */
  models: ReadonlySet<string> | null;
  /** The least urgent band set along the chain; null: none. */
  band: string | null;
  /** The innermost profile set; null: none. */
  profile: string | null;
  /** Innermost first: every level of the chain, each with its own counters. */
  levels: readonly Level[];
}

/**
 * Resolves a chain's limits, innermost first (`chain[0]` the key). `bands` lists the
 * admission bands most urgent first; a band name not among them (the config dropped it)
 * is ignored rather than trusted.
 */
export function resolveLimits(chain: readonly { scope: ScopeKind; id: string; limits: Limits | null }[], bands: readonly string[]): EffectiveLimits {
  let rpm: number | null = null;
  let tpm: number | null = null;
  let models: Set<string> | null = null;
  let band: string | null = null;
  let bandRank = -1;
  let profile: string | null = null;
  const levels: Level[] = [];
  for (const { scope, id, limits: l } of chain) {
    levels.push({ scope, id, rpm: l?.rpm ?? null, tpm: l?.tpm ?? null, budget: l?.budget ?? null, period: l?.budget != null ? (l.period ?? 'month') : null, counters: null });
    if (!l) continue;
    if (l.rpm !== null) rpm = rpm === null ? l.rpm : Math.min(rpm, l.rpm);
    if (l.tpm !== null) tpm = tpm === null ? l.tpm : Math.min(tpm, l.tpm);
    if (l.models !== null) models = models === null ? new Set(l.models) : new Set(l.models.filter((m) => models!.has(m)));
    if (l.band !== null) {
      const rank = bands.indexOf(l.band);
      if (rank > bandRank) {
        bandRank = rank;
        band = l.band;
      }
    }
    profile ??= l.profile;
  }
  return { rpm, tpm, models, band, profile, levels };
}
