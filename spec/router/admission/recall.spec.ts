import { test } from '../../support/uvu.js';
import * as assert from 'uvu/assert';
import type { AdmissionConfig } from '../../../src/config/types.js';
import type { LlmgwError } from '../../../src/errors.js';
import { Admission } from '../../../src/router/admission/admission.js';
import { AdmissionQueue, type Ticket } from '../../../src/router/admission/admission-queue.js';
import { recallCount, STUCK_MIN_MS, STUCK_STEPS } from '../../../src/router/admission/recall.js';
import type { Lease } from '../../../src/router/endpoint-table.js';
import { tableOf } from '../helpers.js';

const NOW = 1_000_000;
const CFG: AdmissionConfig = {
  enabled: true,
  bands: [
    { name: 'platinum', queue_limit: 100, queue_timeout_ms: 1_000 },
    { name: 'bronze', queue_limit: 2, queue_timeout_ms: 1_000 },
  ],
  priority_header: true,
  target_waiting_per_replica: 2,
  reserved_share: 0,
  kv_ceiling: 0.9,
  stale_inflight_per_replica: 8,
  max_queued: 1_000,
  aging_ms: 60_000,
  prefill_tokens_per_replica: 0,
  recall: true,
};

/** One engine with `sent` recallable lower-band requests sent at the given times, each noting when it is recalled. */
function engineWith(sent: number[], shape: Parameters<typeof tableOf>[1] = () => ({})) {
  const { table, eps } = tableOf(1, shape);
  const e = eps[0]!;
  const recalled: number[] = [];
  const leases: Lease[] = sent.map((at, i) => {
    const lease = table.lease(e, at, 'recallable');
    lease.whenRecalled(() => recalled.push(i));
    return lease;
  });
  return { table, e, leases, recalled };
}

test('batch size known: as many of the newest unstarted as the router holds beyond it', () => {
  const { e, leases } = engineWith([1, 2, 3, 4, 5], () => ({ batchCapacity: 3 }));
  assert.is(recallCount(e, NOW), 2, '5 in flight to a batch of 3');
  e.batchCapacity = 5;
  assert.is(recallCount(e, NOW), 0);
  e.batchCapacity = 0;
  leases[0]!.started();
  leases[1]!.started();
  assert.is(recallCount(e, NOW), 3, 'never those that began: only the 3 unstarted');
});

test(`batch size unknown: every unstarted request once the oldest has gone ${STUCK_STEPS} steps (at least ${STUCK_MIN_MS} ms) without a first token`, () => {
  const { e } = engineWith([NOW - 45, NOW - 30, NOW - 1]);
  assert.is(recallCount(e, NOW), 0, 'no step time seen yet: nothing can be told stuck');
  e.stepMs = 10;
  assert.is(recallCount(e, NOW), 3, 'the oldest 45 ms, past 4 steps of 10: it and all sent after it wait');
  e.stepMs = 12;
  assert.is(recallCount(e, NOW), 0, '45 ms is under 4 steps of 12: it may be prefilling');
  e.stepMs = 1;
  assert.is(recallCount(e, NOW - 26), 0, `19 ms: within ${STUCK_MIN_MS} ms, however short the steps`);
});

test('makeWay recalls the newest first-come-first-served waiters, in the order they were sent; not where the engine orders by priority, nor with recall off', () => {
  const { table, e, leases, recalled } = engineWith([1, 2, 3, 4, 5], () => ({ batchCapacity: 2 }));
  const off = new Admission('m', table, { ...CFG, recall: false }, 5_000);
  assert.is(off.makeWay(e, NOW), 0);
  e.enginePriority = 'lower-first';
  const on = new Admission('m', table, CFG, 5_000);
  assert.is(on.makeWay(e, NOW), 0, 'the engine puts the first band ahead itself');
  e.enginePriority = null;
  assert.is(on.makeWay(e, NOW), 3);
  assert.equal(recalled, [2, 3, 4]);
  assert.is(e.unstarted.length, 2, 'the recalled left the list at once');
  assert.is(e.inflight, 2, 'and the engine\'s load: it drops a request it had not begun');
  assert.is(on.makeWay(e, NOW), 0, 'what is left fits the batch');
  assert.not.ok(leases[2]!.recall(NOW), 'a lease is recalled at most once');
  for (const l of leases) l.release(NOW);
  assert.is(e.inflight, 0);
  assert.equal(e.unstarted, []);
});

test('a lease leaves the unstarted at its first token or its end; only recallable leases join', () => {
  const { table, e, leases } = engineWith([1, 2]);
  table.lease(e, 3, 'first-band');
  table.lease(e, 4);
  assert.equal(e.unstarted, leases);
  leases[0]!.started();
  assert.equal(e.unstarted, [leases[1]]);
  assert.not.ok(leases[0]!.recall(5), 'begun: no longer recallable');
  leases[1]!.release(5);
  assert.equal(e.unstarted, []);
  assert.not.ok(leases[1]!.recall(5));
});

test('the first band is not held in llmgw by lower-band requests that sending it would recall', () => {
  // Batch of 2: 2 running, 3 lower-band requests queued in the engine behind them.
  const { table, e } = engineWith([1, 2, 3, 4, 5], () => ({ batchCapacity: 2, loadAt: NOW, load: { running: 2, waiting: 3, kvUsage: 0.2 } }));
  e.inflightAtLoad = 5;
  assert.is(new Admission('m', table, CFG, 5_000).saturated(NOW, 0), null, 'the 3 ahead of it would be recalled');
  assert.match(new Admission('m', table, { ...CFG, recall: false }, 5_000).saturated(NOW, 0) ?? '', /3 waiting in the engines of 1 replicas/);
  e.unstarted.splice(0, 4); // the others had begun: only 1 of the 3 can be recalled
  assert.match(new Admission('m', table, CFG, 5_000).saturated(NOW, 0) ?? '', /2 waiting/);
});

const ticket = (id: string, band: number, enqueuedAt: number, out: string[]): Ticket => ({
  band,
  enqueuedAt,
  promptTokens: 0,
  settle: (err: LlmgwError | null) => void out.push(err ? `${id}: ${err.code}` : id),
});

test('a recalled request rejoins its band before every request that came after it, past the band limit, and is counted', () => {
  const q = new AdmissionQueue('m', CFG.bands, 60_000, 100);
  const out: string[] = [];
  q.push(ticket('b2', 1, 20, out));
  q.push(ticket('b3', 1, 30, out));
  q.rejoin(ticket('b1', 1, 10, out));
  q.rejoin(ticket('b2.5', 1, 25, out));
  assert.equal(out, [], 'not shed though the band holds 2 at most');
  for (let t = q.next(100); t; t = q.next(100)) t.settle(null);
  assert.equal(out, ['b1', 'b2', 'b2.5', 'b3']);
  assert.is(q.stats()[1]!.recalled, 2);
});

test('rejoin ends the old permit\'s hold once queued: the request goes again as soon as it may, as of when it first came', async () => {
  const { table, eps: [e] } = tableOf(1, () => ({ batchCapacity: 1, loadAt: Date.now(), load: { running: 0, waiting: 0, kvUsage: 0 } }));
  const a = new Admission('m', table, CFG, 5_000);
  const now = Date.now();
  const permit = a.tryAdmit(1, now)!;
  const lease = table.lease(e!, now, 'recallable');
  assert.match(a.saturated(now, 1) ?? '', /no free batch slot/, 'the one slot is held');
  lease.release(now);
  const again = await a.rejoin(permit, new AbortController().signal);
  assert.ok(again, 'released at once: its own hold was what filled the slot');
  assert.is(again.since, permit.since);
  assert.is(a.queue.stats()[1]!.recalled, 1);
  again.release(Date.now());
});

test.run();
