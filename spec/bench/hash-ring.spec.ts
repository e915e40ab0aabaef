import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { createHashRing, hash32, positionName } from '../../bench/baselines/hash-ring.js';

const members = ['http://127.0.0.1:9001', 'http://127.0.0.1:9002', 'http://127.0.0.1:9003', 'http://127.0.0.1:9004'];
const keys = Array.from({ length: 20_000 }, (_, i) => `tenant-${i}`);
const self = (m: string): string => m;

test('a key always goes to the same member, whatever order the members were given in', () => {
  const a = createHashRing(members, self);
  const b = createHashRing(members.slice().reverse(), self);
  for (const k of keys) assert.is(b.owner(k), a.owner(k), k);
  assert.is(a.size, members.length * 160);
});

test('virtual nodes give each member a fair share: within 20% of a quarter each over 20k keys', () => {
  const ring = createHashRing(members, self);
  const counts = new Map(members.map((m) => [m, 0]));
  for (const k of keys) counts.set(ring.owner(k), counts.get(ring.owner(k))! + 1);
  for (const [m, n] of counts) assert.ok(Math.abs(n / keys.length - 0.25) < 0.05, `${m} got ${n} of ${keys.length}`);
});

test('one point per member is far less even than 160: the spread comes from the virtual nodes', () => {
  const share = (points: number): number => {
    const ring = createHashRing(members, self, points);
    const counts = new Map(members.map((m) => [m, 0]));
    for (const k of keys) counts.set(ring.owner(k), counts.get(ring.owner(k))! + 1);
    return Math.max(...counts.values()) / keys.length;
  };
  assert.ok(share(1) > 0.35, `largest share with one point each: ${share(1)}`);
  assert.ok(share(160) < 0.3, `largest share with 160 points each: ${share(160)}`);
});

test('a member leaving moves only the keys it owned; the others stay where they were', () => {
  const full = createHashRing(members, self);
  const gone = members[2]!;
  const less = createHashRing(
    members.filter((m) => m !== gone),
    self,
  );
  let moved = 0;
  for (const k of keys) {
    if (full.owner(k) === gone) moved++;
    else assert.is(less.owner(k), full.owner(k), k);
  }
  assert.ok(moved > 0);
});

test('a key past the last point wraps to the owner of the first point', () => {
  const ring = createHashRing(['a', 'b'], self, 1);
  const [first, last] = [hash32('a#0'), hash32('b#0')].sort((x, y) => x - y) as [number, number];
  const firstOwner = hash32('a#0') === first ? 'a' : 'b';
  const past = keys.find((k) => hash32(k) > last);
  const between = keys.find((k) => hash32(k) > first && hash32(k) <= last);
  assert.ok(past !== undefined && between !== undefined);
  assert.is(ring.owner(past), firstOwner);
  assert.is.not(ring.owner(between), firstOwner);
});

test('ring 0 names upstreams by position alone; another ring is another draw, as fair', () => {
  assert.is(positionName(2), 'upstream-2');
  assert.is(positionName(2, 0), 'upstream-2');
  const ring0 = createHashRing([0, 1, 2, 3], (i) => positionName(i));
  const ring1 = createHashRing([0, 1, 2, 3], (i) => positionName(i, 1));
  const counts = [0, 0, 0, 0];
  let moved = 0;
  for (const k of keys) {
    counts[ring1.owner(k)]!++;
    if (ring1.owner(k) !== ring0.owner(k)) moved++;
  }
  // Independent draws agree on about a quarter of the keys.
  assert.ok(moved / keys.length > 0.6, `only ${moved} of ${keys.length} keys placed differently`);
  for (const n of counts) assert.ok(Math.abs(n / keys.length - 0.25) < 0.05, `a member got ${n} of ${keys.length}`);
});

test('an empty ring is refused', () => {
  assert.throws(() => createHashRing([], self), /at least one member/);
});
test.run();
