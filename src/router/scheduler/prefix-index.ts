/**
 * Which endpoints recently served which prompt prefixes: block hash → endpoint ids, most
 * recent first. Tier-1 prefix affinity: it remembers where the router *sent* a prefix,
 * not what the engine still holds, so it is a good guess rather than the truth.
 *
 * Bounded with two generations instead of a per-entry LRU list: entries live in
 * `current` until it is full, then `current` becomes `previous` and the old `previous`
 * is dropped whole. A hit in `previous` moves to `current`. Everything used within the
 * last `capacity / 2` insertions survives, at O(1) per touch with no linked list — this
 * runs once per prompt block on the main thread.
 */
export class PrefixIndex {
  private current = new Map<number, string[]>();
  private previous = new Map<number, string[]>();
  /** Scratch for `match`, kept to avoid allocating per request. */
  private readonly owners: string[] = [];
  private readonly depth: number[] = [];
  private readonly generation: number;

  constructor(
    capacity: number,
    /** How many endpoints one block remembers (replicas a hot prefix is spread over). */
    private readonly perBlock = 4,
  ) {
    this.generation = Math.max(1, Math.floor(capacity / 2));
  }

  /**
   * For each candidate, how many leading blocks of `hashes` it served last, into `out`.
   * Walks the chain from the start and stops at the first block nobody served: a chained
   * hash cannot match past a mismatch.
   */
  match(hashes: Float64Array, ids: readonly string[], out: Float64Array): void {
    out.fill(0, 0, ids.length);
    // The few endpoints that served any of this chain, with the deepest block each served.
    const owners = this.owners;
    const depth = this.depth;
    owners.length = 0;
    depth.length = 0;
    for (let b = 0; b < hashes.length; b++) {
      const served = this.get(hashes[b]!);
      if (served === undefined) break;
      for (const id of served) {
        const at = owners.indexOf(id);
        if (at === -1) {
          owners.push(id);
          depth.push(b + 1);
        } else depth[at] = b + 1;
      }
    }
    if (owners.length === 0) return;
    for (let i = 0; i < ids.length; i++) {
      const at = owners.indexOf(ids[i]!);
      if (at !== -1) out[i] = depth[at]!;
    }
  }

  /**
   * How many leading blocks of `hashes` one of `endpoints` served last: the head an
   * engine is expected to hold in its prefix cache, for admission's prefill pacing.
   */
  servedDepth(hashes: Float64Array, endpoints: readonly { readonly id: string }[]): number {
    let depth = 0;
    for (let b = 0; b < hashes.length; b++) {
      const served = this.get(hashes[b]!);
      if (served === undefined || !endpoints.some((e) => served.includes(e.id))) break;
      depth = b + 1;
    }
    return depth;
  }

  /** `id` served the prompt whose block chain is `hashes`. */
  record(hashes: Float64Array, id: string): void {
    for (let b = 0; b < hashes.length; b++) {
      const h = hashes[b]!;
      const owners = this.get(h);
      if (owners === undefined) {
        this.put(h, [id]);
        continue;
      }
      const at = owners.indexOf(id);
      if (at === 0) continue;
      if (at > 0) owners.splice(at, 1);
      else if (owners.length >= this.perBlock) owners.pop();
      owners.unshift(id);
    }
  }

  get size(): number {
    return this.current.size + this.previous.size;
  }

  private get(h: number): string[] | undefined {
    const hit = this.current.get(h);
    if (hit !== undefined) return hit;
    const old = this.previous.get(h);
    if (old !== undefined) {
      this.previous.delete(h);
      this.put(h, old);
    }
    return old;
  }

  private put(h: number, owners: string[]): void {
    if (this.current.size >= this.generation) {
      this.previous = this.current;
      this.current = new Map();
    }
    this.current.set(h, owners);
  }
}
