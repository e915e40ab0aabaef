import { suite } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { BLOCK_SIZE, KvCache, ROOT_HASH, extendBlockHashes, hashBlock } from '../../src/sim/kv-cache.js';

const test = suite('sim kv-cache');

const range = (from: number, n: number): number[] => Array.from({ length: n }, (_, i) => from + i);

test('a block hash depends on its parent, so equal 16-token windows in different prefixes differ', () => {
  const tokens = range(100, BLOCK_SIZE);
  assert.is(hashBlock(ROOT_HASH, tokens, 0), hashBlock(ROOT_HASH, tokens.slice(), 0));
  assert.is.not(hashBlock(ROOT_HASH, tokens, 0), hashBlock(ROOT_HASH + 1, tokens, 0));
  const swapped = tokens.slice();
  [swapped[3], swapped[4]] = [swapped[4]!, swapped[3]!];
  assert.is.not(hashBlock(ROOT_HASH, tokens, 0), hashBlock(ROOT_HASH, swapped, 0));
  const h = hashBlock(ROOT_HASH, tokens, 0);
  assert.ok(Number.isSafeInteger(h) && h >= 0, 'a hash is a non-negative safe integer (usable as a Map key)');
});

test('extendBlockHashes covers full blocks only and is incremental', () => {
  const tokens = range(0, 40);
  const hashes: number[] = [];
  extendBlockHashes(hashes, tokens);
  assert.is(hashes.length, 2, '40 tokens = 2 full blocks + 8');
  assert.is(hashes[1], hashBlock(hashes[0]!, tokens, 16), 'the second block chains the first');
  tokens.push(...range(40, 8));
  extendBlockHashes(hashes, tokens);
  assert.is(hashes.length, 3);
});

test('usage counts referenced blocks; cached-but-free blocks are free', () => {
  const kv = new KvCache(10);
  const a = [kv.allocate(), kv.allocate(), kv.allocate()];
  assert.is(kv.usage(), 0.3);
  kv.cacheBlock(a[0]!, 111);
  kv.cacheBlock(a[1]!, 222);
  kv.release(a);
  assert.is(kv.usage(), 0);
  assert.is(kv.numFreeBlocks, 10);
  assert.is(kv.numCachedBlocks, 2, 'freed blocks keep their hashes');
  assert.equal(kv.lookup([111, 222, 333], 10), [a[0], a[1]]);
});

test('lookup stops at the first miss and at maxBlocks', () => {
  const kv = new KvCache(8);
  const b = [kv.allocate(), kv.allocate(), kv.allocate()];
  b.forEach((blk, i) => kv.cacheBlock(blk, 1000 + i));
  assert.equal(kv.lookup([1000, 1001, 1002], 2), [b[0], b[1]]);
  assert.equal(kv.lookup([1000, 9999, 1002], 8), [b[0]]);
  assert.equal(kv.lookup([9999], 8), []);
});

test('a hit on a free cached block takes it off the free list; shared blocks are ref-counted', () => {
  const kv = new KvCache(4);
  const first = [kv.allocate(), kv.allocate()];
  kv.cacheBlock(first[0]!, 7);
  kv.release(first);
  const hits = kv.lookup([7], 4);
  assert.ok(kv.canAllocate(3, hits), '3 fresh + 1 hit = the 4 free blocks');
  assert.not.ok(kv.canAllocate(4, hits), 'a touched hit is no longer free to hand out');
  kv.touch(hits);
  kv.touch(hits); // a second sequence with the same prefix
  assert.is(kv.refCount(hits[0]!), 2);
  assert.is(kv.numUsedBlocks, 1);
  kv.release(hits);
  assert.is(kv.numUsedBlocks, 1, 'still held by the other sequence');
  kv.release(hits);
  assert.is(kv.numUsedBlocks, 0);
  assert.throws(() => kv.release(hits), /released more often/);
});

test('eviction takes the least recently freed block, and a sequence tail before its head', () => {
  const kv = new KvCache(4);
  const seqA = [kv.allocate(), kv.allocate()];
  const seqB = [kv.allocate(), kv.allocate()];
  seqA.forEach((b, i) => kv.cacheBlock(b, 10 + i));
  seqB.forEach((b, i) => kv.cacheBlock(b, 20 + i));
  kv.release(seqA); // freed first: evicted first, its tail (block 11) before its head (10)
  kv.release(seqB);
  kv.allocate();
  assert.equal(kv.lookup([10, 11], 4).length, 1, "A's tail went first");
  assert.is(kv.evictions, 1);
  kv.allocate();
  assert.equal(kv.lookup([10], 4), [], "then A's head");
  assert.equal(kv.lookup([20, 21], 4).length, 2, 'B, freed later, is still cached');
});

test('a duplicate hash keeps the first copy cached and frees the second without a hash', () => {
  const kv = new KvCache(4);
  const a = kv.allocate();
  const b = kv.allocate();
  kv.cacheBlock(a, 5);
  kv.cacheBlock(b, 5);
  assert.equal(kv.lookup([5], 1), [a]);
  kv.release([b]);
  kv.allocate(); // the two never-used blocks come first
  kv.allocate();
  kv.allocate(); // now b is evicted: it had no hash, so nothing is lost
  assert.is(kv.evictions, 0);
  assert.equal(kv.lookup([5], 1), [a]);
});

test('allocate refuses when nothing is free rather than corrupting state', () => {
  const kv = new KvCache(1);
  kv.allocate();
  assert.not.ok(kv.canAllocate(1));
  assert.throws(() => kv.allocate(), /exhausted/);
});

test.run();
