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
  /** Candidate id → slot, rebuilt per lookup; kept to avoid an allocation per request. */
  private readonly slot = new Map<string, number>();
  private readonly generation: number;

  constructor(
    capacity: number,
    /** How many endpoints one block remembers (replicas a hot prefix is spread over). */
    private readonly perBlock = 4,
  ) {
    this.generation = Math.max(1, Math.floor(capacity / 2));
  }

  /**
   * For each candidate, the share of `hashes` (0–1) it served last, into `out`. Walks the
   * chain from the start and stops at the first block nobody served: a chained hash
   * cannot match past a mismatch.
   */
  match(hashes: Float64Array, ids: readonly string[], out: Float64Array): void {
    out.fill(0, 0, ids.length);
    if (hashes.length === 0) return;
    this.slot.clear();
    for (let i = 0; i < ids.length; i++) this.slot.set(ids[i]!, i);
    for (let b = 0; b < hashes.length; b++) {
      const owners = this.get(hashes[b]!);
      if (owners === undefined) break;
      const share = (b + 1) / hashes.length;
      for (const id of owners) {
        const i = this.slot.get(id);
        if (i !== undefined) out[i] = share;
      }
    }
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
