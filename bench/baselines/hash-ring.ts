// A consistent-hash ring with virtual nodes, as nginx's `hash $key consistent` (ketama)
// and Envoy's ring_hash balancer build it: each member owns many points on a 32-bit
// circle, and a key goes to the owner of the first point at or after the key's hash. The
// many points even out the share each member gets; and a member leaving moves only the
// keys it held, which is why peers key tenants this way for cache affinity.

import { createHash } from 'node:crypto';

/** nginx's ketama ring uses 160 points per member of weight 1. */
export const DEFAULT_POINTS_PER_MEMBER = 160;

export interface HashRing<T> {
  /** The member that owns `key`. */
  owner(key: string): T;
  /** How many points the ring holds (members × points per member, less collisions). */
  readonly size: number;
}

/**
 * The ring name of the upstream at `position` on the proxy's command line. Not its URL:
 * the engines' ports differ from run to run, and a ring over them would place tenants
 * differently each time, so two runs of one workload would not compare. `ring` picks
 * one of many equally good rings: which tenants share an engine is a draw, and
 * a deployment gets one draw; ring 0 is the unsalted names.
 */
export const positionName = (position: number, ring = 0): string => (ring === 0 ? `upstream-${position}` : `upstream-${position}~${ring}`);

/** First 4 bytes of MD5, as ketama takes them: fast enough, and well spread for short keys. */
export function hash32(key: string): number {
  return createHash('md5').update(key).digest().readUInt32BE(0);
}

/**
 * A ring over `members`, each named by `name(m)` (its points are `name#0`, `name#1`, …,
 * so the ring depends on the names only, not on their order).
 */
export function createHashRing<T>(members: readonly T[], name: (m: T) => string, pointsPerMember = DEFAULT_POINTS_PER_MEMBER): HashRing<T> {
  if (members.length === 0) throw new Error('a hash ring needs at least one member');
  const points: { at: number; member: T; name: string }[] = [];
  for (const m of members) for (let i = 0; i < pointsPerMember; i++) points.push({ at: hash32(`${name(m)}#${i}`), member: m, name: name(m) });
  // Ties (rare) go to the smaller name, so the ring does not depend on member order either.
  points.sort((a, b) => a.at - b.at || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const at = Uint32Array.from(points, (p) => p.at);
  const owners = points.map((p) => p.member);
  return {
    size: at.length,
    owner(key) {
      const h = hash32(key);
      // First point ≥ h; past the last point the circle wraps to the first.
      let lo = 0;
      let hi = at.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (at[mid]! < h) lo = mid + 1;
        else hi = mid;
      }
      return owners[lo === at.length ? 0 : lo]!;
    },
  };
}
