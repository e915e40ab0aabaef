import type { RoutingProfileConfig, ScorerName } from './types.js';

const weights = (w: Partial<Record<ScorerName, number>>): Record<ScorerName, number> => ({
  queue: 0,
  kv: 0,
  inflight: 0,
  prefix: 0,
  session: 0,
  weight: 0,
  ...w,
});

/**
 * The profiles every server has. A config profile of the same name replaces one.
 *
 * - `chat`: interactive, multi-turn. Prefix affinity counts most (a cached system prompt
 *   and history cut time to first token) until the engine holding it starts to queue:
 *   its waiting count and in-flight count together then outweigh the cache, so one
 *   popular prompt does not pile onto one engine.
 * - `batch`: throughput. Load and KV headroom only; affinity would concentrate work.
 * - `long-context`: KV headroom first (a long prompt on a full cache preempts others),
 *   then affinity, since re-prefilling a long prompt is the most expensive miss.
 *
 * The weights were chosen with `npm run bench quality` (see the router's README section).
 */
export const BUILTIN_ROUTING_PROFILES: readonly RoutingProfileConfig[] = Object.freeze([
  { name: 'chat', scorers: weights({ prefix: 3, queue: 2, inflight: 2, kv: 1, session: 1, weight: 0.2 }) },
  { name: 'batch', scorers: weights({ inflight: 1, queue: 1, kv: 1, weight: 0.5 }) },
  { name: 'long-context', scorers: weights({ kv: 2, prefix: 1.5, inflight: 1, queue: 1, weight: 0.2 }) },
]);
