import type { ScorerName } from '../../config/types.js';
import type { EndpointState } from '../endpoint-table.js';
import { waitingNow } from '../load-estimate.js';
import type { PrefixIndex } from './prefix-index.js';
import type { RouteRequest, Scorer } from './types.js';

/**
 * Load scores are relative: the least loaded candidate scores 1 and one with n more
 * requests scores (min+1)/(x+1). A difference of one request matters when endpoints are
 * nearly idle and fades when they are all busy, as it does for the wait it causes.
 */
function relative(values: Float64Array, n: number, out: Float64Array): void {
  let min = Infinity;
  for (let i = 0; i < n; i++) if (values[i]! < min) min = values[i]!;
  for (let i = 0; i < n; i++) out[i] = (min + 1) / (values[i]! + 1);
}

/**
 * A score from the engines' scraped load. Endpoints whose load is missing or older than
 * `staleAfterMs` get the worst fresh score (never better than an endpoint that proves
 * it is idle); when no load is fresh the scorer abstains (all 1), and the in-flight
 * scorer decides alone.
 */
function scraped(name: ScorerName, staleAfterMs: number, read: (e: EndpointState) => number | null, toScore: (v: Float64Array, n: number, out: Float64Array) => void): Scorer {
  let values = new Float64Array(64);
  let fresh = new Uint8Array(64);
  return {
    name,
    score(candidates, req, out) {
      const n = candidates.length;
      if (values.length < n) [values, fresh] = [new Float64Array(n * 2), new Uint8Array(n * 2)];
      let freshCount = 0;
      let someValue = 0;
      for (let i = 0; i < n; i++) {
        const e = candidates[i]!;
        const v = e.loadAt !== null && req.now - e.loadAt <= staleAfterMs ? read(e) : null;
        fresh[i] = v === null ? 0 : 1;
        if (v !== null) {
          values[i] = someValue = v;
          freshCount++;
        }
      }
      if (freshCount === 0) return void out.fill(1, 0, n);
      // Stale slots borrow a fresh value so they cannot shift a relative score, then
      // take the worst fresh score.
      for (let i = 0; i < n; i++) if (fresh[i] === 0) values[i] = someValue;
      toScore(values, n, out);
      let worst = Infinity;
      for (let i = 0; i < n; i++) if (fresh[i] === 1 && out[i]! < worst) worst = out[i]!;
      for (let i = 0; i < n; i++) if (fresh[i] === 0) out[i] = worst;
    },
  };
}

export interface ScorerDeps {
  staleAfterMs: number;
  /** KV usage from which an engine queues what it is sent (`router.admission.kv_ceiling`). */
  kvCeiling: number;
  prefixIndex: PrefixIndex;
}

/** Every scorer, by the name routing profiles use. */
export function createScorers(deps: ScorerDeps): Record<ScorerName, Scorer> {
  let buf = new Float64Array(64);
  let ids: string[] = [];

  return {
    inflight: {
      name: 'inflight',
      score(candidates, _req, out) {
        const n = candidates.length;
        if (buf.length < n) buf = new Float64Array(n * 2);
        for (let i = 0; i < n; i++) buf[i] = candidates[i]!.inflight;
        relative(buf, n, out);
      },
    },

    // The queue now, not as scraped: a scrape is up to a poll interval old, and an engine
    // whose queue just drained must not keep losing to one that just filled.
    queue: scraped('queue', deps.staleAfterMs, (e) => (e.load === null ? null : waitingNow(e, deps.kvCeiling)), relative),

    kv: scraped('kv', deps.staleAfterMs, (e) => e.load?.kvUsage ?? null, (v, n, out) => {
      for (let i = 0; i < n; i++) out[i] = 1 - v[i]!;
    }),

    // By the blocks a candidate would prefill beyond what the best one would: k more
    // scores 1/(k+1). Blocks every candidate must prefill (the new message, the last
    // answer) do not dilute the difference, nor does a long system prompt they all hold:
    // as a share of the prompt, an engine holding only the shared system prompt scored
    // nearly as well as the one also holding the conversation, and one more request in
    // flight moved the conversation off its cache.
    prefix: {
      name: 'prefix',
      score(candidates, req, out) {
        const n = candidates.length;
        if (req.prefix === null || req.prefix.length === 0) return void out.fill(0, 0, n);
        ids.length = 0;
        for (const c of candidates) ids.push(c.id);
        deps.prefixIndex.match(req.prefix, ids, out);
        let best = 0;
        for (let i = 0; i < n; i++) if (out[i]! > best) best = out[i]!;
        for (let i = 0; i < n; i++) out[i] = 1 / (best - out[i]! + 1);
      },
    },

    // Rendezvous hashing: each session goes to the candidate with the highest
    // hash(session, endpoint). Stateless, and when an endpoint leaves only its own
    // sessions move.
    session: {
      name: 'session',
      score(candidates, req, out) {
        const n = candidates.length;
        out.fill(0, 0, n);
        if (req.session === null) return;
        let best = -1;
        let bestAt = 0;
        const seed = fnv1a(req.session, 0x811c9dc5);
        for (let i = 0; i < n; i++) {
          const h = fnv1a(candidates[i]!.id, seed);
          if (h > best) {
            best = h;
            bestAt = i;
          }
        }
        out[bestAt] = 1;
      },
    },

    weight: {
      name: 'weight',
      score(candidates, _req, out) {
        let max = 0;
        for (const c of candidates) max = Math.max(max, c.weight);
        for (let i = 0; i < candidates.length; i++) out[i] = max > 0 ? candidates[i]!.weight / max : 1;
      },
    },
  };
}

function fnv1a(s: string, seed: number): number {
  let h = seed >>> 0;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619) >>> 0;
  // One more mix so that ids differing in their last character spread over the range.
  h ^= h >>> 15;
  return Math.imul(h, 2246822507) >>> 0;
}
