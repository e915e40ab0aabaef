// A seeded PRNG for workloads: the same seed gives the same prompts, conversations and
// arrival times, so two routing policies are offered exactly the same load.

export interface Rng {
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform whole number in [min, max]. */
  int(min: number, max: number): number;
  /** Exponentially distributed with the given mean (Poisson inter-arrival times). */
  exp(mean: number): number;
  pick<T>(items: readonly T[]): T;
}

/** mulberry32: tiny, fast and well distributed; plenty for synthetic load. */
export function createRng(seed: number): Rng {
  let a = seed >>> 0;
  const next = (): number => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    exp: (mean) => -mean * Math.log(1 - next()),
    pick: (items) => items[Math.floor(next() * items.length)]!,
  };
}
