import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { AdmissionConfig } from '../../../src/config/types.js';
import { Admission } from '../../../src/router/admission/admission.js';
import { saturation } from '../../../src/router/admission/saturation.js';
import { tableOf } from '../helpers.js';

const NOW = 1_000_000;
const STALE = 5_000;
const CFG: AdmissionConfig = {
  enabled: true,
  bands: [
    { name: 'platinum', queue_limit: 100, queue_timeout_ms: 1_000 },
    { name: 'bronze', queue_limit: 100, queue_timeout_ms: 1_000 },
  ],
  priority_header: true,
  target_waiting_per_replica: 2,
  reserved_share: 0,
  kv_ceiling: 0.9,
  stale_inflight_per_replica: 8,
  max_queued: 1_000,
  aging_ms: 60_000,
};

const TOP = { inTransit: 0, holdBack: null };
const fresh = (waiting: number, kvUsage = 0.2) => ({ load: { waiting, running: 4, kvUsage }, loadAt: NOW - 100 });

test('each saturation signal on its own: the waiting queue, KV usage, in-flight counts when metrics are stale', () => {
  const { eps } = tableOf(2, () => fresh(0));
  assert.is(saturation(eps, CFG, NOW, STALE, TOP), null, 'idle');
  eps[0]!.load = { waiting: 5, running: 4, kvUsage: 0.2 };
  assert.match(saturation(eps, CFG, NOW, STALE, TOP) ?? '', /5 waiting in the engines of 2 replicas \(target 4\)/);
  eps[0]!.load = { waiting: 0, running: 4, kvUsage: 0.95 };
  assert.is(saturation(eps, CFG, NOW, STALE, TOP), null, 'one full cache: the other replica still has room');
  eps[1]!.load = { waiting: 0, running: 4, kvUsage: 0.92 };
  assert.match(saturation(eps, CFG, NOW, STALE, TOP) ?? '', /KV cache 92% full on every replica \(ceiling 90%\)/);
  for (const e of eps) e.loadAt = NOW - STALE - 1;
  assert.is(saturation(eps, CFG, NOW, STALE, TOP), null, 'stale metrics are not read');
  eps[0]!.inflight = 9;
  eps[1]!.inflight = 7;
  assert.match(saturation(eps, CFG, NOW, STALE, TOP) ?? '', /16 requests in flight on 2 replicas with stale metrics \(limit 16\)/);
});

test('requests sent since the scrape count as waiting once an engine queues; unusable replicas do not count', () => {
  const { eps } = tableOf(2, () => fresh(1));
  assert.is(saturation(eps, CFG, NOW, STALE, TOP), null);
  eps[0]!.inflight = 3; // three more sent to a queueing engine since its scrape
  assert.match(saturation(eps, CFG, NOW, STALE, TOP) ?? '', /5 waiting/);
  eps[1]!.ready = false; // one replica left: the target shrinks with it
  assert.match(saturation(eps, CFG, NOW, STALE, TOP) ?? '', /4 waiting in the engines of 1 replicas \(target 2\)/);
  eps[0]!.ready = false;
  assert.is(saturation(eps, CFG, NOW, STALE, TOP), null, 'no usable replica is a 503 for the dispatcher, not a queue');
});

test('once an engine was seen queueing, a burst is counted against its batch capacity at once', () => {
  const { eps } = tableOf(1, () => fresh(0));
  eps[0]!.load = { waiting: 0, running: 1, kvUsage: 0.2 };
  eps[0]!.inflight = eps[0]!.inflightAtLoad = 1;
  eps[0]!.inflight += 6; // a burst since the scrape
  assert.is(saturation(eps, CFG, NOW, STALE, TOP), null, 'capacity unknown: the engine had free slots, trust it');
  eps[0]!.batchCapacity = 4;
  assert.match(saturation(eps, CFG, NOW, STALE, TOP) ?? '', /3 waiting in the engines of 1 replicas \(target 2\)/, '1 running + 6 sent − 4 slots');
});

test('not saturated: admitted at once; saturated: queued, then released highest band first as room appears', async () => {
  const { table, eps } = tableOf(1, () => ({ ...fresh(0), batchCapacity: 4 }));
  eps[0]!.load = { waiting: 0, running: 2, kvUsage: 0.5 };
  const a = new Admission('m', table, CFG, STALE);
  eps[0]!.loadAt = Date.now();
  assert.ok(a.tryAdmit(1, Date.now()));
  eps[0]!.load = { waiting: 5, running: 2, kvUsage: 0.5 };
  assert.not.ok(a.tryAdmit(0, Date.now()));
  const order: string[] = [];
  const ac = new AbortController();
  const waits = [a.wait(1, Date.now(), ac.signal).then(() => order.push('bronze')), a.wait(0, Date.now(), ac.signal).then(() => order.push('platinum'))];
  assert.not.ok(a.tryAdmit(0, Date.now()), 'nothing jumps a non-empty queue');
  a.release(Date.now());
  await Promise.resolve();
  assert.equal(order, [], 'still saturated');
  eps[0]!.load = { waiting: 0, running: 2, kvUsage: 0.5 };
  eps[0]!.inflightAtLoad = eps[0]!.inflight;
  a.release(Date.now());
  await waits[1];
  assert.equal(order, ['platinum'], 'bronze leaves room for the platinum request in flight');
  a.dispatched();
  a.finished(0, Date.now());
  await waits[0];
  assert.equal(order, ['platinum', 'bronze']);
  assert.equal(
    a.queue.stats().map((s) => [s.band, s.admitted]),
    [
      ['platinum', 1],
      ['bronze', 2],
    ],
  );
});

test('released requests count as load until they are dispatched, so one release does not become a flood', () => {
  const { table, eps } = tableOf(1, () => fresh(0));
  eps[0]!.loadAt = Date.now();
  eps[0]!.load = { waiting: 9, running: 4, kvUsage: 0.5 };
  const a = new Admission('m', table, { ...CFG, target_waiting_per_replica: 2 }, STALE);
  const ac = new AbortController();
  let released = 0;
  for (let i = 0; i < 10; i++) void a.wait(0, Date.now(), ac.signal).then(() => released++);
  eps[0]!.load = { waiting: 0, running: 4, kvUsage: 0.5 };
  a.release(Date.now());
  assert.is(a.queue.length, 7, 'three released: the target of 2 plus the one that reaches it');
});

test('while the first band is in use, lower bands use no reserved slot, wait for nothing inside the engine, and leave room for its requests in flight', () => {
  const { table, eps } = tableOf(1, () => fresh(0));
  Object.assign(eps[0]!, { batchCapacity: 10, loadAt: Date.now(), load: { waiting: 0, running: 6, kvUsage: 0.5 } });
  const a = new Admission('m', table, { ...CFG, reserved_share: 0.2 }, STALE);
  const now = Date.now();
  eps[0]!.inflight = 4;
  assert.is(a.saturated(now, 1), null, 'no first-band traffic yet: the whole batch and the waiting target are theirs');
  eps[0]!.inflight = 0;
  assert.ok(a.tryAdmit(0, now));
  a.finished(0, now);
  assert.is(a.saturated(now, 1), null, '6 running of the 8 slots bronze may fill');
  eps[0]!.inflight = 2; // two more sent since the scrape
  assert.match(a.saturated(now, 1) ?? '', /no free batch slot on 1 replicas beyond the reserved ones and 0 kept for the first band/);
  assert.is(a.saturated(now, 0), null, 'the first band still has the two reserved slots');
  eps[0]!.inflight = 0;
  assert.ok(a.tryAdmit(0, now) && a.tryAdmit(0, now), 'two platinum requests go');
  assert.match(a.saturated(now, 1) ?? '', /no free batch slot/, 'and bronze keeps two more free for the next ones');
  a.finished(0, now);
  a.finished(0, now);
  assert.is(a.saturated(now, 1), null);
});

test('a client that leaves while queued is removed at once; a timeout rejects with 503', async () => {
  const { table, eps } = tableOf(1, () => fresh(9));
  eps[0]!.loadAt = Date.now();
  const a = new Admission('m', table, CFG, STALE);
  const ac = new AbortController();
  const leaving = a.wait(0, Date.now(), ac.signal);
  ac.abort();
  await leaving;
  assert.is(a.queue.length, 0);
  assert.is(a.queue.stats()[0]!.cancelled, 1);
  const late = a.wait(1, Date.now() - 2_000, new AbortController().signal);
  a.release(Date.now());
  await late.then(
    () => assert.unreachable('released'),
    (err: { code: string; status: number }) => {
      assert.is(err.code, 'LLMGW_QUEUE_TIMEOUT');
      assert.is(err.status, 503);
    },
  );
});

test.run();
