export interface HashPrefixInput {
  text: string;
  /** Characters per block; only full blocks are hashed, like an engine's KV blocks. */
  blockChars: number;
  /** At most this many blocks (long prompts need only their head for affinity). */
  maxBlocks?: number;
}

/**
 * Hashes a prompt into a chain of block hashes: block i's hash covers block i and,
 * through its parent, everything before it — so two prompts share hash i exactly when
 * they share their first i+1 blocks. 53-bit hashes (cyrb53) fit a Float64Array, which
 * moves across threads without a copy.
 */
export function hashPrefix(input: HashPrefixInput): Float64Array {
  const { text, blockChars } = input;
  const blocks = Math.min(Math.floor(text.length / blockChars), input.maxBlocks ?? Infinity);
  const out = new Float64Array(blocks);
  let parent = 0;
  for (let b = 0; b < blocks; b++) {
    parent = cyrb53(text, b * blockChars, (b + 1) * blockChars, parent);
    out[b] = parent;
  }
  return out;
}

function cyrb53(s: string, from: number, to: number, seed: number): number {
  let h1 = 0xdeadbeef ^ (seed >>> 0);
  let h2 = 0x41c6ce57 ^ Math.floor(seed / 0x100000000);
  for (let i = from; i < to; i++) {
    const ch = s.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4294967296 * (2097151 & h2) + (h1 >>> 0);
}
