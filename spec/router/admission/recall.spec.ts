import { test } from '../../support/uvu.js';
import * as assert from 'uvu/assert';
import type { AdmissionConfig } from '../../../src/config/types.js';
import type { LlmgwError } from '../../../src/errors.js';
import { Admission } from '../../../src/router/admission/admission.js';
import { AdmissionQueue, type Ticket } from '../../../src/router/admission/admission-queue.js';
import { recallCount } from '../../../src/router/admission/recall.js';
import type { Lease, LeaseRole } from '../../../src/router/endpoint-table.js';
import { ADMISSION, tableOf } from '../helpers.js';

const NOW = 1_000_000;
const CFG: AdmissionConfig = { ...ADMISSION, bands: [ADMISSION.bands[0]!, { name: 'bronze', queue_limit: 2, queue_timeout_ms: 1_000 }] };

/** One engine with lower-band requests of `roles` sent at times 1, 2, …, each noting when it is recalled. */
function engineWith(roles: LeaseRole[], shape: Parameters<typeof tableOf>[1] = () => ({})) {
  const { table, eps } = tableOf(1, shape);
  const e = eps[0]!;
  const recalled: number[] = [];
  const leases: Lease[] = roles.map((role, i) => {
    const lease = table.lease(e, i + 1, role);
    lease.whenRecalled(() => recalled.push(i) > 0);
    return lease;
  });
  return { table, e, leases, recalled };
}
const collected = (n: number): LeaseRole[] => Array.from({ length: n }, () => 'collected-lower');

test('as many of the newest recallable as the router holds beyond the batch, and one more: the first-band request needs a slot', () => {
  const { e, leases } = engineWith(collected(5), () => ({ batchSize: 3, batchCapacity: 3 }));
  assert.is(recallCount(e), 3, '5 in flight to a batch of 3, and the new one');
  e.batchCapacity = 6;
  assert.is(recallCount(e), 0, 'a slot is free');
  e.batchCapacity = 0;
  leases[0]!.release(NOW);
  leases[1]!.release(NOW);
  assert.is(recallCount(e), 3, 'never more than are recallable');
});

test('batch size unknown: the slots the engine was seen running, its streams to the router included', () => {
  const { e, leases } = engineWith(collected(5));
  assert.is(recallCount(e), 0, 'never seen running anything: nothing is known to be full');
  e.peakRunning = 4;
  assert.is(recallCount(e), 2);
  for (const l of leases) l.started(true);
  assert.is(e.peakRunning, 5, 'five streaming at once: it runs at least five');
  assert.is(recallCount(e), 1, 'all five run; the new one needs a sixth');
});

test('a learnt batch size being probed past the most the engine ran: the slots are what it ran', () => {
  const { e } = engineWith(collected(17), () => ({ batchCapacity: 19, peakRunning: 16 }));
  assert.is(recallCount(e), 2, '17 in flight where 16 ran, and the new one');
  e.peakRunning = 19;
  assert.is(recallCount(e), 0, 'once it ran 19, they are slots');
  e.batchSize = 16;
  e.batchCapacity = 16;
  e.peakRunning = 8;
  assert.is(recallCount(e), 2, 'a batch size given, not learnt, is taken as it is');
  e.batchCapacity = 20;
  assert.is(recallCount(e), 0);
});

test('a lease is recallable until its answer is committed to the client, or it ends; an answer sent whole does not count as running', () => {
  const { table, e, leases } = engineWith(['streamed-lower', 'collected-lower']);
  table.lease(e, 3, 'first-band');
  const plain = table.lease(e, 4);
  assert.equal(e.recallable, leases, 'only the lower bands\'');
  leases[0]!.started(true);
  leases[1]!.started(true);
  assert.equal(e.recallable, leases, 'running, and nothing of it with the client yet');
  leases[0]!.committed();
  assert.equal(e.recallable, [leases[1]]);
  assert.not.ok(leases[0]!.recall(5));
  plain.started(false);
  assert.is(e.streaming, 2, 'the whole answer does not count as running');
  leases[1]!.release(5);
  assert.equal(e.recallable, []);
  assert.is(e.streaming, 1);
  assert.not.ok(leases[1]!.recall(5));
});

test('an attempt already ending otherwise refuses a recall: that ending stands', () => {
  const { e, leases } = engineWith(collected(2), () => ({ batchSize: 1, batchCapacity: 1 }));
  leases[1]!.whenRecalled(() => false);
  assert.not.ok(leases[1]!.recall(NOW));
  assert.is(e.recallable.length, 2, 'still held, and still listed: its attempt will end it');
  assert.is(e.inflight, 2);
});

test('makeWay recalls the newest, in the order they were sent, and their holds end at once; not where the engine orders by priority, nor with recall off', () => {
  const { table, e, leases, recalled } = engineWith(collected(5), () => ({ batchSize: 3, batchCapacity: 3 }));
  const off = new Admission('m', table, { ...CFG, recall: false }, 5_000);
  assert.is(off.makeWay(e, NOW), 0);
  e.enginePriority = 'lower-first';
  const on = new Admission('m', table, CFG, 5_000);
  assert.is(on.makeWay(e, NOW), 0, 'the engine puts the first band ahead itself');
  e.enginePriority = null;
  assert.is(on.makeWay(e, NOW), 3);
  assert.equal(recalled, [2, 3, 4]);
  assert.is(e.recallable.length, 2, 'the recalled left the list at once');
  assert.is(e.inflight, 2, "and the engine's load");
  assert.is(on.makeWay(e, NOW), 0, 'a slot is free now');
  assert.not.ok(leases[2]!.recall(NOW), 'a lease is recalled at most once');
  for (const l of leases) l.release(NOW);
  assert.is(e.inflight, 0);
  assert.equal(e.recallable, []);
});

test('a first-band request takes back the newest lower-band prompts sent unpaced and still awaiting a first chunk past the pacing budget, never the oldest: a batch job that ran alone left the engine a queue of long prompts', () => {
  const { table, eps } = tableOf(1, () => ({ batchSize: 64, batchCapacity: 64, loadAt: NOW, load: { running: 10, waiting: 0, kvUsage: 0.3 } }));
  const e = eps[0]!;
  const recalled: number[] = [];
  const leases = Array.from({ length: 10 }, (_, i) => {
    const lease = table.lease(e, i + 1, 'streamed-lower', 1_600);
    lease.whenRecalled(() => recalled.push(i) > 0);
    return lease;
  });
  leases[0]!.started(true);
  leases[1]!.started(true);
  assert.is(e.lowerPrefilling, 8 * 1_600, 'eight still prefilling, 60 slots free: no slot to recall for');
  const paced = { ...CFG, prefill_tokens_per_replica: 4_096 };
  assert.is(new Admission('m', table, { ...paced, recall: false }, 5_000).makeWay(e, NOW), 0, 'recall off');
  assert.is(new Admission('m', table, CFG, 5_000).makeWay(e, NOW), 0, 'pacing off: no budget to hold to');
  leases[9]!.whenRecalled(() => false);
  const a = new Admission('m', table, paced, 5_000);
  assert.is(a.makeWay(e, NOW), 0, 'no first band yet: nothing was paced, and nothing is protected');
  assert.ok(a.tryAdmit(0, NOW), 'the first band begins: lower bands are paced from here');
  assert.is(a.makeWay(e, NOW), 6, '12,800 tokens ahead of it, 4,096 allowed');
  assert.equal(recalled, [8, 7, 6, 5, 4, 3], 'the newest that can still be taken back; the one refusing stays, and counts');
  assert.is(e.lowerPrefilling, 2 * 1_600);
  assert.is(a.makeWay(e, NOW), 0, 'within the budget');
  const paced1 = table.lease(e, NOW + 1, 'streamed-lower', 3_000);
  paced1.whenRecalled(() => recalled.push(10) > 0);
  assert.is(a.makeWay(e, NOW + 2), 0, 'over the budget with a prompt sent paced: that one is left to pacing');
  for (const l of [...leases, paced1]) l.release(NOW);
  const big = table.lease(e, 11, 'streamed-lower', 6_000);
  big.whenRecalled(() => recalled.push(10) > 0);
  assert.is(a.makeWay(e, NOW), 0, 'the oldest awaiting its first chunk stays, over the budget alone');
});

test('a recall from an engine of unknown size that has run no more for a while brings the adaptive limit down to what it ran', () => {
  const { table, e, leases } = engineWith(collected(30), () => ({ peakRunning: 16, peakGrewAt: NOW - 50 }));
  const a = new Admission('m', table, CFG, 5_000);
  const limit = (a as unknown as { limit: { value: number } }).limit;
  limit.value = 32;
  assert.is(a.makeWay(e, NOW), 15, '30 in flight, seen running 16: 15 recalled');
  assert.is(a.adaptiveLimit, 32, 'its peak grew 50 ms ago: still filling, the limit stands');
  const more = (n: number) => {
    for (let i = 0; i < n; i++) {
      const lease = table.lease(e, NOW, 'collected-lower');
      lease.whenRecalled(() => true);
      leases.push(lease);
    }
  };
  more(15);
  e.peakGrewAt = NOW - 1_000;
  assert.is(a.makeWay(e, NOW), 15);
  assert.is(a.adaptiveLimit, 16, 'running 16 for a second: the 32 it had grown to would send the recalled straight back');
  e.batchCapacity = 16;
  limit.value = 32;
  more(3);
  assert.is(a.makeWay(e, NOW), 3);
  assert.is(a.adaptiveLimit, 32, 'a known size: the limit does not govern it, and is left alone');
  for (const l of leases) l.release(NOW);
});

test('a recall from an engine whose learnt capacity is probed, and which has run no more for a while, ends the probe: the capacity falls back to what it ran', () => {
  const { table, e, leases } = engineWith(collected(17), () => ({ batchCapacity: 19, peakRunning: 16, peakGrewAt: NOW - 50, capacityProbeGapMs: 5_000 }));
  const a = new Admission('m', table, CFG, 5_000);
  assert.is(a.makeWay(e, NOW), 2, '17 in flight where 16 ran, and the new one');
  assert.is(e.batchCapacity, 19, 'its peak grew 50 ms ago: it may still be running more, the probe goes on');
  for (let i = 0; i < 2; i++) {
    const lease = table.lease(e, NOW, 'collected-lower');
    lease.whenRecalled(() => true);
    leases.push(lease);
  }
  e.peakGrewAt = NOW - 1_000;
  assert.is(a.makeWay(e, NOW), 2);
  assert.is(e.batchCapacity, 16, 'running 16 for a second: the probe room would take the recalled straight back');
  assert.is(e.capacityProbeAfter, NOW + 5_000, 'the next probe waits');
  assert.is(e.capacityProbeGapMs, 10_000, 'and the one after twice as long, as for a probe the scrapes find full');
  for (const l of leases) l.release(NOW);
});

test('the first band is not held in llmgw by lower-band requests that sending it would recall', () => {
  // Batch of 2: 2 running, 3 lower-band requests queued in the engine behind them.
  const { table, e } = engineWith(collected(5), () => ({ batchSize: 2, batchCapacity: 2, loadAt: NOW, load: { running: 2, waiting: 3, kvUsage: 0.2 } }));
  e.inflightAtLoad = 5;
  assert.is(new Admission('m', table, CFG, 5_000).saturated(NOW, 0), null, 'the 3 ahead of it would be recalled');
  assert.match(new Admission('m', table, { ...CFG, recall: false }, 5_000).saturated(NOW, 0) ?? '', /3 waiting in the engines of 1 replicas/);
  e.recallable.splice(0, 4); // the others were streamed and had begun: only 1 can be recalled
  assert.match(new Admission('m', table, CFG, 5_000).saturated(NOW, 0) ?? '', /2 waiting/);
});

const ticket = (id: string, band: number, enqueuedAt: number, out: string[]): Ticket => ({
  band,
  enqueuedAt,
  promptTokens: 0,
  settle: (err: LlmgwError | null) => void out.push(err ? `${id}: ${err.code}` : id),
});

test('recalled requests rejoin at the head of their band, in the order they first asked, past the band limit, and are counted', () => {
  const q = new AdmissionQueue('m', CFG.bands, 60_000, 100);
  const out: string[] = [];
  q.push(ticket('b4', 1, 40, out));
  q.push(ticket('b5', 1, 50, out));
  q.rejoin({ ...ticket('b2', 1, 95, out), firstAsked: 20 });
  q.rejoin({ ...ticket('b1', 1, 99, out), firstAsked: 10 });
  q.rejoin({ ...ticket('b3', 1, 90, out), firstAsked: 30 });
  assert.equal(out, [], 'not shed though the band holds 2 at most');
  for (let t = q.next(100); t; t = q.next(100)) t.settle(null);
  assert.equal(out, ['b1', 'b2', 'b3', 'b4', 'b5']);
  const stats = q.stats()[1]!;
  assert.is(stats.recalled, 3);
  assert.is(stats.admitted, 2, 'admitted counts requests: a rejoined one was counted when first admitted');
});

test('rejoin ends the old permit\'s hold once queued: the request goes again as soon as it may, keeping the wait it had, not the time it spent in the engine', async () => {
  const { table, eps: [e] } = tableOf(1, () => ({ batchSize: 1, batchCapacity: 1, loadAt: Date.now(), load: { running: 0, waiting: 0, kvUsage: 0 } }));
  const a = new Admission('m', table, CFG, 5_000);
  const now = Date.now();
  // Admitted without queueing 5 s ago, and in the engine since.
  const permit = a.tryAdmit(1, now - 5_000)!;
  const lease = table.lease(e!, now, 'collected-lower');
  assert.match(a.saturated(now, 1) ?? '', /no free batch slot/, 'the one slot is held');
  lease.release(now);
  const again = await a.rejoin(permit, new AbortController().signal);
  assert.ok(again, 'released at once: its own hold was what filled the slot');
  assert.ok(again.queuedMs <= Date.now() - now, `it had not queued: its bronze timeout of 1 s starts afresh, not 5 s spent (queued ${again.queuedMs} ms)`);
  const stats = a.queue.stats()[1]!;
  assert.is(stats.recalled, 1);
  assert.is(stats.admitted, 1, 'one request, admitted once');
  again.release(Date.now());
});

test('a rejoined request is never shed to make room; the newest never admitted is', () => {
  const q = new AdmissionQueue('m', CFG.bands, 60_000, 2);
  const out: string[] = [];
  q.rejoin({ ...ticket('back', 1, 10, out), firstAsked: 10 });
  q.push(ticket('new', 1, 20, out));
  q.push(ticket('p', 0, 30, out));
  assert.equal(out, ['new: LLMGW_QUEUE_FULL']);
  q.push(ticket('p2', 0, 40, out));
  assert.equal(out, ['new: LLMGW_QUEUE_FULL', 'p2: LLMGW_QUEUE_FULL'], 'with only a rejoined one below, the newcomer is refused');
});

test.run();
