// The simulated engine's KV cache: a fixed pool of blocks of BLOCK_SIZE tokens with a
// prefix cache, modelled on vLLM v1's BlockPool + KVCacheManager because a router can
// see its effects (cached_tokens in usage, vllm:kv_cache_usage_perc, prefix hit counters).
//
// - A *full* block gets a hash that chains its parent's hash and its token ids, so equal
//   hashes mean equal prefixes, not just equal 16-token windows.
// - Blocks are ref-counted: two running sequences with the same prefix share blocks.
// - A freed block keeps its hash and stays findable until a fresh block is needed; then the
//   least recently freed one is evicted. Free blocks (cached or not) count as free for
//   `usage()`, exactly as vLLM reports them.

/** Tokens per KV block (vLLM's default `--block-size`). */
export const BLOCK_SIZE = 16;

/** Hash of the (absent) parent of a sequence's first block. Fixed, so hashes are stable across runs. */
export const ROOT_HASH = 0x5eed_1234;

const NO_HASH = -1;
const NIL = -1;

/**
 * Hash of one full block: its parent's hash and BLOCK_SIZE token ids from `start`.
 * Two murmur3-style 32-bit lanes folded into a non-negative 53-bit integer, so the result is an
 * exact JS number usable as a Map key without BigInt or string allocation.
 */
export function hashBlock(parent: number, tokens: ArrayLike<number>, start: number): number {
  let h1 = (parent >>> 0) ^ 0x9e3779b9;
  let h2 = Math.floor(parent / 0x1_0000_0000) ^ 0x85ebca6b;
  for (let i = 0; i < BLOCK_SIZE; i++) {
    const k = tokens[start + i]! | 0;
    h1 = Math.imul(h1 ^ k, 0xcc9e2d51);
    h1 = (h1 << 15) | (h1 >>> 17);
    h1 = (Math.imul(h1, 0x1b873593) + 0xe6546b64) | 0;
    h2 = Math.imul(h2 ^ (k + i), 0x85ebca77);
    h2 = (h2 << 13) | (h2 >>> 19);
    h2 = (Math.imul(h2, 0xc2b2ae3d) + 0x27d4eb2f) | 0;
  }
  h1 = fmix32(h1 ^ h2);
  h2 = fmix32(h2 + h1);
  return (h2 & 0x1f_ffff) * 0x1_0000_0000 + (h1 >>> 0);
}

function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h;
}

/**
 * Extends `hashes` (the chained hashes of a sequence's full blocks) to cover every full block
 * of `tokens`. Incremental: a decoding sequence only hashes the block it just filled.
 */
export function extendBlockHashes(hashes: number[], tokens: ArrayLike<number>): void {
  const full = Math.floor(tokens.length / BLOCK_SIZE);
  while (hashes.length < full) {
    const parent = hashes.length === 0 ? ROOT_HASH : hashes[hashes.length - 1]!;
    hashes.push(hashBlock(parent, tokens, hashes.length * BLOCK_SIZE));
  }
}

export class KvCache {
  readonly numBlocks: number;
  readonly enablePrefixCaching: boolean;
  private readonly refs: Int32Array;
  private readonly hashes: Float64Array;
  // The free list is a doubly linked list threaded through two arrays (vLLM's
  // FreeKVCacheBlockQueue): O(1) pop at the head, append at the tail, and removal from the
  // middle when a cached free block is hit again.
  private readonly prev: Int32Array;
  private readonly next: Int32Array;
  private head = NIL;
  private tail = NIL;
  private free = 0;
  private readonly byHash = new Map<number, number>();
  /** Cached blocks overwritten to make room; for tests and diagnostics. */
  evictions = 0;

  constructor(numBlocks: number, enablePrefixCaching = true) {
    if (!Number.isInteger(numBlocks) || numBlocks < 1) throw new RangeError(`numBlocks must be a whole number ≥ 1, not ${numBlocks}`);
    this.numBlocks = numBlocks;
    this.enablePrefixCaching = enablePrefixCaching;
    this.refs = new Int32Array(numBlocks);
    this.hashes = new Float64Array(numBlocks).fill(NO_HASH);
    this.prev = new Int32Array(numBlocks).fill(NIL);
    this.next = new Int32Array(numBlocks).fill(NIL);
    for (let b = 0; b < numBlocks; b++) this.pushTail(b);
  }

  /** Blocks not referenced by any sequence, including cached ones that could be evicted. */
  get numFreeBlocks(): number {
    return this.free;
  }

  /** Blocks referenced by at least one sequence. */
  get numUsedBlocks(): number {
    return this.numBlocks - this.free;
  }

  /** Blocks that hold a findable prefix hash (in use or free). */
  get numCachedBlocks(): number {
    return this.byHash.size;
  }

  /** Fraction 0–1 of blocks in use; cached-but-free blocks are free, as in vLLM. */
  usage(): number {
    return (this.numBlocks - this.free) / this.numBlocks;
  }

  refCount(block: number): number {
    return this.refs[block]!;
  }

  /**
   * The blocks holding the longest cached prefix of `hashes`, at most `maxBlocks` of them.
   * Does not take references; call `canAllocate` then `touch` to use them.
   */
  lookup(hashes: readonly number[], maxBlocks: number): number[] {
    const hits: number[] = [];
    if (!this.enablePrefixCaching) return hits;
    const n = Math.min(hashes.length, maxBlocks);
    for (let i = 0; i < n; i++) {
      const b = this.byHash.get(hashes[i]!);
      if (b === undefined) break;
      hits.push(b);
    }
    return hits;
  }

  /**
   * Whether `numNew` fresh blocks can be handed out after `hits` are touched: a hit block
   * that is free today stops being free once touched, so it is no longer available for
   * eviction.
   */
  canAllocate(numNew: number, hits: readonly number[] = []): boolean {
    let freeHits = 0;
    for (const b of hits) if (this.refs[b] === 0) freeHits++;
    return numNew + freeHits <= this.free;
  }

  /** Takes a reference on each block (prefix-cache hits); a free one leaves the free list. */
  touch(blocks: readonly number[]): void {
    for (const b of blocks) {
      if (this.refs[b] === 0) this.unlink(b);
      this.refs[b]!++;
    }
  }

  /** A fresh block for one sequence: the least recently freed, its cached hash evicted. */
  allocate(): number {
    const b = this.head;
    if (b === NIL) throw new Error('KV cache exhausted: check canAllocate() first');
    this.unlink(b);
    const h = this.hashes[b]!;
    if (h !== NO_HASH) {
      if (this.byHash.get(h) === b) this.byHash.delete(h);
      this.hashes[b] = NO_HASH;
      this.evictions++;
    }
    this.refs[b] = 1;
    return b;
  }

  /**
   * Drops one reference on each block. Blocks are released last-first so a sequence's tail
   * is evicted before its head: the head (system prompt, shared prefix) is the part most
   * likely to be asked for again.
   */
  release(blocks: readonly number[]): void {
    for (let i = blocks.length - 1; i >= 0; i--) {
      const b = blocks[i]!;
      if (this.refs[b]! <= 0) throw new Error(`KV block ${b} released more often than taken`);
      if (--this.refs[b]! === 0) this.pushTail(b);
    }
  }

  /**
   * Makes a full block findable by its hash. If another block already holds that hash
   * (two identical prompts prefilled at once), the first one stays the cached copy and
   * this one is simply freed later without a hash.
   */
  cacheBlock(block: number, hash: number): void {
    if (!this.enablePrefixCaching || this.hashes[block] !== NO_HASH) return;
    if (this.byHash.has(hash)) return;
    this.hashes[block] = hash;
    this.byHash.set(hash, block);
  }

  /** Forgets every cached hash (vLLM's reset_prefix_cache); blocks in use stay allocated. */
  resetPrefixCache(): void {
    for (const b of this.byHash.values()) this.hashes[b] = NO_HASH;
    this.byHash.clear();
  }

  private pushTail(b: number): void {
    this.prev[b] = this.tail;
    this.next[b] = NIL;
    if (this.tail === NIL) this.head = b;
    else this.next[this.tail] = b;
    this.tail = b;
    this.free++;
  }

  private unlink(b: number): void {
    const p = this.prev[b]!;
    const n = this.next[b]!;
    if (p === NIL) this.head = n;
    else this.next[p] = n;
    if (n === NIL) this.tail = p;
    else this.prev[n] = p;
    this.prev[b] = NIL;
    this.next[b] = NIL;
    this.free--;
  }
}
