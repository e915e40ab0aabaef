import { BUILTIN_ROUTING_PROFILES } from '../../config/routing-profiles.js';
import { SCORER_NAMES, type RoutingProfileConfig, type ScorerName } from '../../config/types.js';
import type { Profile, Scorer } from './types.js';

/**
 * The in-flight scorer is the only signal that is never stale (scraped metrics are a
 * poll interval old, and at a thousand requests a second that is a thousand decisions),
 * so every profile keeps at least this much of it.
 */
export const MIN_INFLIGHT_WEIGHT = 0.1;

/** Built-in profiles overlaid with the configured ones, resolved to scorers. */
export function buildProfiles(configured: readonly RoutingProfileConfig[], scorers: Record<ScorerName, Scorer>): Map<string, Profile> {
  const byName = new Map<string, RoutingProfileConfig>();
  for (const p of [...BUILTIN_ROUTING_PROFILES, ...configured]) byName.set(p.name, p);
  const out = new Map<string, Profile>();
  for (const p of byName.values()) {
    const terms = SCORER_NAMES.map((name) => ({
      scorer: scorers[name],
      weight: name === 'inflight' ? Math.max(p.scorers.inflight, MIN_INFLIGHT_WEIGHT) : p.scorers[name],
    })).filter((t) => t.weight > 0);
    out.set(p.name, { name: p.name, band: p.band ?? null, terms, usesPrefix: terms.some((t) => t.scorer.name === 'prefix') });
  }
  return out;
}
