import { test } from '../../support/uvu.js';
import * as assert from 'uvu/assert';
import type { LlmgwError } from '../../../src/errors.js';
import { AdmissionQueue, type Ticket } from '../../../src/router/admission/admission-queue.js';

const BANDS = [
  { name: 'platinum', queue_limit: 10, queue_timeout_ms: 1_000 },
  { name: 'gold', queue_limit: 10, queue_timeout_ms: 1_000 },
  { name: 'silver', queue_limit: 10, queue_timeout_ms: 1_000 },
  { name: 'bronze', queue_limit: 3, queue_timeout_ms: 5_000 },
];

interface Probe extends Ticket {
  id: string;
  result: 'waiting' | 'released' | string;
}
const ticket = (id: string, band: number, enqueuedAt = 0): Probe => {
  const t: Probe = {
    id,
    band,
    enqueuedAt,
    promptTokens: 0,
    result: 'waiting',
    settle: (err: LlmgwError | null) => {
      t.result = err ? `${err.code}: ${err.message}` : 'released';
    },
  };
  return t;
};
const drain = (q: AdmissionQueue, now: number): string[] => {
  const out: string[] = [];
  for (let t = q.next(now) as Probe | undefined; t; t = q.next(now) as Probe | undefined) out.push(t.id);
  return out;
};

test('released highest band first, first come first served within a band', () => {
  const q = new AdmissionQueue('m', BANDS, 10_000, 100);
  for (const [id, band] of [['b1', 3], ['s1', 2], ['p1', 0], ['b2', 3], ['p2', 0], ['g1', 1]] as const) q.push(ticket(id, band));
  assert.equal(drain(q, 0), ['p1', 'p2', 'g1', 's1', 'b1', 'b2']);
});

test('aging: a request rises one band per aging period, so bronze is never starved by a steady platinum load', () => {
  const q = new AdmissionQueue('m', BANDS, 1_000, 100);
  q.push(ticket('old-bronze', 3, 0));
  q.push(ticket('new-platinum', 0, 3_000));
  assert.equal(drain(q, 3_000), ['new-platinum', 'old-bronze'], 'after 3 periods bronze ties with platinum; the higher band wins a tie');
  q.push(ticket('older-bronze', 3, 0));
  q.push(ticket('newer-platinum', 0, 4_000));
  assert.equal(drain(q, 4_000), ['older-bronze', 'newer-platinum'], 'after 4 periods it goes first');
});

test('a full band refuses its newcomers with 429; other bands are unaffected', () => {
  const q = new AdmissionQueue('m', BANDS, 10_000, 100);
  const ts = ['b1', 'b2', 'b3', 'b4'].map((id) => ticket(id, 3));
  for (const t of ts) q.push(t);
  assert.match(ts[3]!.result, /^LLMGW_QUEUE_FULL: the bronze queue for 'm' is full \(3 waiting\)/);
  const p = ticket('p', 0);
  q.push(p);
  assert.is(p.result, 'waiting');
  assert.equal(q.stats().find((s) => s.band === 'bronze'), { band: 'bronze', queued: 3, admitted: 0, shed: 1, timedOut: 0, cancelled: 0, recalled: 0 });
});

test('a full room sheds the lowest band first: its newest request makes way; with nothing lower the newcomer is refused', () => {
  const q = new AdmissionQueue('m', BANDS, 10_000, 4);
  const [s1, b1, b2, g1] = [ticket('s1', 2), ticket('b1', 3), ticket('b2', 3), ticket('g1', 1)];
  for (const t of [s1, b1, b2, g1]) q.push(t);
  const p1 = ticket('p1', 0);
  q.push(p1);
  assert.match(b2.result, /^LLMGW_QUEUE_FULL: shed to make room for a platinum request/);
  assert.is(b1.result, 'waiting');
  const s2 = ticket('s2', 2);
  q.push(s2);
  assert.match(b1.result, /^LLMGW_QUEUE_FULL/, 'the last bronze goes next');
  const s3 = ticket('s3', 2);
  q.push(s3);
  assert.match(s3.result, /^LLMGW_QUEUE_FULL: 'm' has 4 requests waiting for capacity, none of a lower band than silver/);
  assert.equal(drain(q, 0), ['p1', 'g1', 's1', 's2']);
});

test('a request past its band timeout gets a 503; the others keep waiting', () => {
  const q = new AdmissionQueue('m', BANDS, 60_000, 100);
  const [p, b] = [ticket('p', 0, 0), ticket('b', 3, 0)];
  q.push(p);
  q.push(b);
  q.expire(1_000);
  assert.match(p.result, /^LLMGW_QUEUE_TIMEOUT: waited 1000 ms for capacity on 'm' \(platinum band limit 1000 ms\)/);
  assert.is(b.result, 'waiting');
  assert.is(q.length, 1);
});

test('a cancelled request leaves at once and is not released later', () => {
  const q = new AdmissionQueue('m', BANDS, 10_000, 100);
  const [a, b] = [ticket('a', 2), ticket('b', 2)];
  q.push(a);
  q.push(b);
  assert.ok(q.cancel(a));
  assert.not.ok(q.cancel(a));
  assert.equal(drain(q, 0), ['b']);
  assert.is(q.stats()[2]!.cancelled, 1);
});

test('long runs stay correct as the queue compacts', () => {
  const q = new AdmissionQueue('m', [{ name: 'only', queue_limit: 100_000, queue_timeout_ms: 1_000 }], 10_000, 100_000);
  let next = 0;
  for (let i = 0; i < 5_000; i++) {
    q.push(ticket(String(i), 0));
    if (i % 2 === 1) assert.is((q.next(0) as Probe).id, String(next++));
  }
  assert.is(q.length, 2_500);
  assert.is((q.next(0) as Probe).id, String(next));
});

test.run();
