import type { EndpointState } from '../endpoint-table.js';
import { FILTERS } from './filters.js';
import { keepClearOfFirstBand, keepLeastPrefilling, keepMostRoom } from './most-room.js';
import type { Filter, Profile, RouteRequest } from './types.js';

export interface Rejection {
  id: string;
  reason: string;
}

/**
 * Filter → score → pick. One instance per data port; it keeps its buffers between
 * calls, so a pick allocates nothing but its result (a pick among 64 endpoints is
 * budgeted at 20 µs, `npm run bench pick`).
 *
 * - Filters drop endpoints that must not take the request.
 * - Of the survivors only the highest `priority` stays: lower ones are spare capacity.
 * - For a first-band request, only those with the most free batch slots stay; for a
 *   lower-band one, those prefilling no first-band prompt, where any are, and of those
 *   the ones with the fewest paced prompt tokens awaiting a first token (`most-room.ts`).
 * - Each scorer of the profile scores every candidate 0–1; the weighted sum ranks them.
 * - The best wins; ties are broken at random so equal endpoints share the load instead
 *   of the first in the list taking all of it.
 */
export class Scheduler {
  private candidates: EndpointState[] = [];
  private total = new Float64Array(64);
  /** Each term's scores of the last pick, for `explain()`. */
  private terms: Float64Array[] = [];
  private lastProfile: Profile | null = null;

  constructor(
    private readonly filters: readonly Filter[] = FILTERS,
    private readonly random: () => number = Math.random,
  ) {}

  /** The chosen endpoint, or null when every endpoint was filtered out (see `rejections`). */
  pick(endpoints: readonly EndpointState[], req: RouteRequest, profile: Profile): EndpointState | null {
    const cands = this.candidates;
    cands.length = 0;
    let top = -Infinity;
    outer: for (const e of endpoints) {
      for (const f of this.filters) if (f.reject(e, req) !== null) continue outer;
      if (e.priority > top) {
        top = e.priority;
        cands.length = 0;
      }
      if (e.priority === top) cands.push(e);
    }
    if (req.room) keepMostRoom(cands, req.room);
    if (req.firstBandGateMs) keepClearOfFirstBand(cands, req.now, req.firstBandGateMs);
    if (req.prefillTokens) keepLeastPrefilling(cands);
    const n = cands.length;
    if (n === 0) return null;
    this.lastProfile = null;
    if (n === 1) return cands[0]!; // nothing to rank

    if (this.total.length < n) {
      this.total = new Float64Array(n * 2);
      this.terms = [];
    }
    while (this.terms.length < profile.terms.length) this.terms.push(new Float64Array(this.total.length));
    this.lastProfile = profile;
    const total = this.total;
    total.fill(0, 0, n);
    for (let t = 0; t < profile.terms.length; t++) {
      const { scorer, weight } = profile.terms[t]!;
      const scores = this.terms[t]!;
      scorer.score(cands, req, scores);
      for (let i = 0; i < n; i++) total[i]! += weight * scores[i]!;
    }

    let best = 0;
    let ties = 1;
    for (let i = 1; i < n; i++) {
      const d = total[i]! - total[best]!;
      if (d > 1e-9) {
        best = i;
        ties = 1;
      } else if (d > -1e-9 && this.random() * ++ties < 1) {
        best = i; // reservoir sampling: each of the tied is kept with probability 1/ties
      }
    }
    return cands[best]!;
  }

  /** Why each endpoint was filtered out, for the 503 message and the admin API. */
  rejections(endpoints: readonly EndpointState[], req: RouteRequest): Rejection[] {
    const out: Rejection[] = [];
    for (const e of endpoints) {
      for (const f of this.filters) {
        const reason = f.reject(e, req);
        if (reason !== null) {
          out.push({ id: e.id, reason });
          break;
        }
      }
    }
    return out;
  }

  /** The winner's score by scorer, from the last pick (for the debug log line). */
  explain(winner: EndpointState): Record<string, number> {
    const i = this.candidates.indexOf(winner);
    const out: Record<string, number> = { candidates: this.candidates.length };
    if (i === -1 || this.lastProfile === null) return out;
    this.lastProfile.terms.forEach((t, k) => (out[t.scorer.name] = round(this.terms[k]![i]!)));
    out.total = round(this.total[i]!);
    return out;
  }
}

const round = (v: number): number => Math.round(v * 1000) / 1000;
