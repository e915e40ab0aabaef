import { test } from '../../support/uvu.js';
import * as assert from 'uvu/assert';
import { Admission, type Permit } from '../../../src/router/admission/admission.js';
import { saturation } from '../../../src/router/admission/saturation.js';
import { EndpointTable, type EndpointState } from '../../../src/router/endpoint-table.js';
import { ADMISSION, HEALTH, tableOf } from '../helpers.js';

const NOW = 1_000_000;
const STALE = 5_000;
const CFG = ADMISSION;

const TOP = { inTransit: 0, first: true, slowStart: true, limit: 4, gateMs: Infinity };
const fresh = (waiting: number, kvUsage = 0.2) => ({ load: { waiting, running: 4, kvUsage }, loadAt: NOW - 100 });
/** A first-band request admitted and done at `now`: lower bands are paced from here (`firstBandActive`). */
const firstBandSeen = (a: Admission, now: number): void => a.tryAdmit(0, now)!.release(now);

test('each saturation signal on its own: the waiting queue, KV usage, in-flight counts when metrics are stale', () => {
  const { eps } = tableOf(2, () => fresh(0));
  assert.is(saturation(eps, CFG, NOW, STALE, TOP), null, 'idle');
  eps[0]!.load = { waiting: 5, running: 4, kvUsage: 0.2 };
  assert.is(saturation(eps, CFG, NOW, STALE, TOP), null, 'one replica queues: the other is still under its target');
  eps[1]!.load = { waiting: 2, running: 4, kvUsage: 0.2 };
  assert.match(saturation(eps, CFG, NOW, STALE, TOP) ?? '', /7 waiting in the engines of 2 replicas: none under the target of 2 per replica/);
  eps[0]!.load = { waiting: 0, running: 4, kvUsage: 0.95 };
  eps[1]!.load = { waiting: 0, running: 4, kvUsage: 0.2 };
  assert.is(saturation(eps, CFG, NOW, STALE, TOP), null, 'one full cache: the other replica still has room');
  eps[1]!.load = { waiting: 0, running: 4, kvUsage: 0.92 };
  assert.match(saturation(eps, CFG, NOW, STALE, TOP) ?? '', /KV cache 92% full on every replica \(ceiling 90%\)/);
  for (const e of eps) e.loadAt = NOW - STALE - 1;
  assert.is(saturation(eps, CFG, NOW, STALE, TOP), null, 'stale metrics are not read');
  eps[0]!.inflight = 9;
  eps[1]!.inflight = 7;
  assert.match(saturation(eps, CFG, NOW, STALE, TOP) ?? '', /16 requests in flight on 2 replicas with stale metrics \(limit 16\)/);
});

test('a scrape exactly staleAfterMs old is still read; a full cache must be seen on every replica, a stale one may have room', () => {
  const { eps } = tableOf(1, () => ({ load: { waiting: 5, running: 4, kvUsage: 0.2 }, loadAt: NOW - STALE }));
  assert.match(saturation(eps, CFG, NOW, STALE, TOP) ?? '', /5 waiting in the engines of 1 replicas/);
  eps[0]!.loadAt = NOW - STALE - 1;
  assert.is(saturation(eps, CFG, NOW, STALE, TOP), null, 'stale: only the in-flight count is read, and it is 0');
  const two = tableOf(2, () => fresh(0, 0.95)).eps;
  assert.match(saturation(two, CFG, NOW, STALE, TOP) ?? '', /KV cache 95% full on every replica/);
  two[1]!.loadAt = NOW - STALE - 1;
  assert.is(saturation(two, CFG, NOW, STALE, TOP), null);
});

test('the reserved share is rounded up: a fraction of a slot keeps a whole one', () => {
  const { eps } = tableOf(1, () => ({ ...fresh(0), batchCapacity: 7 }));
  const cfg = { ...CFG, reserved_share: 0.2 }; // 1.4 of 7 slots: 2 reserved, 5 for lower bands
  const bronze = { inTransit: 0, first: false, slowStart: true, limit: 4, gateMs: Infinity };
  eps[0]!.load = { waiting: 0, running: 4, kvUsage: 0.2 };
  assert.is(saturation(eps, cfg, NOW, STALE, bronze), null);
  eps[0]!.load = { waiting: 0, running: 5, kvUsage: 0.2 };
  assert.match(saturation(eps, cfg, NOW, STALE, bronze) ?? '', /no free batch slot/);
});

test('requests sent or finished since the scrape move a queueing engine\'s queue; unusable replicas do not count', () => {
  const { eps } = tableOf(2, () => fresh(1));
  assert.is(saturation(eps, CFG, NOW, STALE, TOP), null);
  eps[0]!.inflight = 3; // three more sent to a queueing engine since its scrape
  assert.is(saturation(eps, CFG, NOW, STALE, TOP), null, 'the other replica still has room for one');
  eps[1]!.inflight = 1;
  assert.match(saturation(eps, CFG, NOW, STALE, TOP) ?? '', /6 waiting in the engines of 2 replicas: none/);
  eps[1]!.inflightAtLoad = 3; // two finished there since its scrape: its queue moved into the batch
  assert.is(saturation(eps, CFG, NOW, STALE, TOP), null);
  eps[1]!.ready = false; // one replica left
  assert.match(saturation(eps, CFG, NOW, STALE, TOP) ?? '', /4 waiting in the engines of 1 replicas: none under the target of 2/);
  eps[0]!.ready = false;
  assert.is(saturation(eps, CFG, NOW, STALE, TOP), null, 'no usable replica is a 503 for the dispatcher, not a queue');
});

test('only the highest usable priority counts: a spare replica\'s room is not the busy tier\'s', () => {
  const { eps } = tableOf(2, () => fresh(0));
  eps[0]!.priority = 1;
  eps[0]!.load = { waiting: 5, running: 4, kvUsage: 0.2 };
  assert.match(saturation(eps, CFG, NOW, STALE, TOP) ?? '', /5 waiting in the engines of 1 replicas/, 'the idle spare takes no traffic while the first tier is usable');
  eps[0]!.ready = false;
  assert.is(saturation(eps, CFG, NOW, STALE, TOP), null, 'the first tier gone: the spare takes traffic, and its room counts');
  eps[1]!.load = { waiting: 3, running: 4, kvUsage: 0.2 };
  assert.match(saturation(eps, CFG, NOW, STALE, TOP) ?? '', /3 waiting in the engines of 1 replicas: none under the target/, 'the first tier gone and the spare full: saturated');
  eps[1]!.load = { waiting: 0, running: 4, kvUsage: 0.2 };
  assert.is(saturation(eps, CFG, NOW, STALE, TOP), null, 'the spare idle again');
});

test('a first tier that is down, draining or behind an open breaker leaves the spares to decide', () => {
  const down: Record<string, (e: EndpointState) => void> = {
    'not ready': (e) => (e.ready = false),
    draining: (e) => (e.draining = true),
    'breaker open': (e) => {
      for (let i = 0; i < 5; i++) e.health.failed(NOW);
    },
  };
  for (const [k, takeOut] of Object.entries(down)) {
    const { eps } = tableOf(2, (i) => ({ ...fresh(i === 0 ? 0 : 4), priority: i === 0 ? 1 : 0 }));
    assert.is(saturation(eps, CFG, NOW, STALE, TOP), null, `${k}: the idle first tier takes the traffic`);
    takeOut(eps[0]!);
    assert.match(saturation(eps, CFG, NOW, STALE, TOP) ?? '', /4 waiting in the engines of 1 replicas/, `${k}: only the full spare is left`);
  }
});

test('once an engine was seen queueing, a burst is counted against its batch capacity at once, and free slots are room', () => {
  const { eps } = tableOf(1, () => fresh(0));
  // Short requests: its KV cache would hold 50 such as the one it runs.
  eps[0]!.load = { waiting: 0, running: 1, kvUsage: 0.02 };
  eps[0]!.inflight = eps[0]!.inflightAtLoad = 1;
  eps[0]!.inflight += 6; // a burst since the scrape
  assert.match(saturation(eps, CFG, NOW, STALE, TOP) ?? '', /5 waiting in the engines of 1 replicas/, 'capacity unknown: of the 6 sent since, those beyond twice the one it ran wait');
  eps[0]!.peakRunning = 8;
  assert.is(saturation(eps, CFG, NOW, STALE, TOP), null, 'it was once seen running 8: room for 16');
  eps[0]!.batchCapacity = 4;
  assert.match(saturation(eps, CFG, NOW, STALE, TOP) ?? '', /3 waiting in the engines of 1 replicas/, '1 running + 6 sent − 4 slots');
  eps[0]!.batchCapacity = 10;
  assert.is(saturation(eps, CFG, NOW, STALE, { ...TOP, inTransit: 4 }), null, '3 free slots and the target of 2: room for 5');
  assert.match(saturation(eps, CFG, NOW, STALE, { ...TOP, inTransit: 5 }) ?? '', /5 released on their way/);
});

test('requests the engine had not counted yet when scraped: the first band trusts the scrape, lower bands do not', () => {
  const { eps } = tableOf(1, () => ({ ...fresh(0), batchCapacity: 10 }));
  // The router had 10 in flight when the engine reported 8: two had not reached its
  // scheduler yet.
  Object.assign(eps[0]!, { load: { waiting: 0, running: 8, kvUsage: 0.2 }, inflight: 10, inflightAtLoad: 10 });
  const bronze = { inTransit: 0, first: false, slowStart: true, limit: 4, gateMs: Infinity };
  assert.match(saturation(eps, CFG, NOW, STALE, bronze) ?? '', /no free batch slot/, 'bronze: 10 of 10 slots taken');
  assert.is(saturation(eps, CFG, NOW, STALE, { ...TOP, inTransit: 3 }), null, 'platinum: 2 free slots and the target of 2');
  assert.match(saturation(eps, CFG, NOW, STALE, { ...TOP, inTransit: 4 }) ?? '', /none under the target/);
  eps[0]!.load = { waiting: 0, running: 6, kvUsage: 0.2 }; // 6 of ours and nobody else's: at least 10 are there
  assert.match(saturation(eps, CFG, NOW, STALE, bronze) ?? '', /no free batch slot/);
  eps[0]!.load = { waiting: 0, running: 9, kvUsage: 0.2 }; // 9 over 8 of ours: another client's request too
  eps[0]!.inflightAtLoad = 8;
  eps[0]!.inflight = 8;
  assert.match(saturation(eps, CFG, NOW, STALE, { ...TOP, inTransit: 3 }) ?? '', /none under the target/, 'one free slot and the target of 2');
});

test('engines of unknown size: both bands count what was sent since a scrape that showed no queue', () => {
  // A flood sent within one poll interval: the scrape still shows 4 running and nothing
  // waiting, but 12 more are on their way into the engine.
  const { table, eps } = tableOf(1, () => ({ loadAt: Date.now(), load: { waiting: 0, running: 4, kvUsage: 0.2 }, inflight: 16, inflightAtLoad: 4 }));
  const a = new Admission('m', table, CFG, STALE);
  const now = Date.now();
  assert.match(a.saturated(now, 0) ?? '', /8 waiting in the engines of 1 replicas/, 'platinum does not go into an engine already full: 16 there, twice the 4 it ran taken as its size');
  eps[0]!.inflight = 9;
  assert.is(a.saturated(now, 0), null, '9 there: one waits, under the target of 2');
  eps[0]!.inflight = 16;
  eps[0]!.peakRunning = 16;
  assert.is(a.saturated(now, 0), null, 'an engine once seen running 16 has room for the 12');
});

test('the first band is held only by lower-band requests it would wait behind, never by its own', () => {
  // An interactive client on its own ramping up faster than the engine's size is
  // guessed: 16 of its requests in flight, the engine last seen running 4.
  const { table, eps } = tableOf(1, () => ({ loadAt: Date.now(), load: { waiting: 0, running: 4, kvUsage: 0.2 }, inflight: 16, inflightAtLoad: 4, topInflight: 16 }));
  const a = new Admission('m', table, CFG, STALE);
  const now = Date.now();
  assert.is(a.saturated(now, 0), null, 'all 16 are first-band: held in llmgw it would wait behind the same requests');
  eps[0]!.topInflight = 15;
  assert.is(a.saturated(now, 0), null, 'one of a lower band: at most one ahead of it, under the target of 2');
  eps[0]!.topInflight = 12;
  assert.match(a.saturated(now, 0) ?? '', /4 waiting in the engines of 1 replicas/, '4 lower-band requests may be queued ahead of it');
  Object.assign(eps[0]!, { load: { waiting: 6, running: 4, kvUsage: 0.2 }, inflightAtLoad: 10, topInflight: 16 });
  assert.is(a.saturated(now, 0), null, 'an engine seen queueing, but all it holds is first-band requests of this router');
  eps[0]!.inflightAtLoad = 7;
  assert.match(a.saturated(now, 0) ?? '', /3 waiting/, '3 of what it held when scraped were not the router\'s: another client\'s, of any band');
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
  let platinum: Permit | null = null;
  const waits = [
    a.wait(1, Date.now(), ac.signal).then(() => order.push('bronze')),
    a.wait(0, Date.now(), ac.signal).then((p) => {
      platinum = p;
      order.push('platinum');
    }),
  ];
  eps[0]!.load = { waiting: 0, running: 2, kvUsage: 0.5 }; // room now: only the queue holds a newcomer back
  assert.is(a.holdReason(0, Date.now()), 'requests of its band or above are queued ahead');
  assert.not.ok(a.tryAdmit(0, Date.now()), 'nothing jumps a non-empty queue');
  eps[0]!.load = { waiting: 5, running: 2, kvUsage: 0.5 };
  a.release(Date.now());
  await Promise.resolve();
  assert.equal(order, [], 'still saturated');
  eps[0]!.load = { waiting: 0, running: 3, kvUsage: 0.5 }; // one slot free
  eps[0]!.inflightAtLoad = eps[0]!.inflight;
  a.release(Date.now());
  await waits[1];
  assert.equal(order, ['platinum'], 'the one free slot goes to the higher band; bronze counts platinum on its way into it');
  (platinum as Permit | null)!.release(Date.now());
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
  assert.is(a.queue.length, 8, 'two released: as many as the waiting target lets wait');
});

test('lower bands use no reserved slot, wait for nothing inside the engine, and leave room for the first band\'s requests in flight', () => {
  const { table, eps } = tableOf(1, () => fresh(0));
  Object.assign(eps[0]!, { batchCapacity: 10, loadAt: Date.now(), load: { waiting: 0, running: 6, kvUsage: 0.5 } });
  const a = new Admission('m', table, { ...CFG, reserved_share: 0.2 }, STALE);
  const now = Date.now();
  assert.is(a.saturated(now, 1), null, '6 running of the 8 slots bronze may fill');
  eps[0]!.inflight = 2; // two more sent since the scrape
  assert.match(a.saturated(now, 1) ?? '', /no free batch slot on 1 replicas beyond the reserved ones/, 'even before any first-band request: the reserve is kept');
  assert.is(a.saturated(now, 0), null, 'the first band still has the two reserved slots');
  eps[0]!.inflight = 0;
  const permits = [a.tryAdmit(0, now), a.tryAdmit(0, now), a.tryAdmit(0, now)];
  assert.ok(permits.every((p) => p !== null), 'three platinum requests go');
  eps[0]!.inflight = 3;
  assert.match(a.saturated(now, 1) ?? '', /no free batch slot/, 'in flight, they take the last free slot and the reserve: bronze waits');
  eps[0]!.inflight = 1;
  permits[0]!.release(now);
  permits[1]!.release(now);
  assert.is(a.saturated(now, 1), null, 'two of them done: 7 of the 8');
  permits[2]!.release(now);
});

test('an idle replica always takes a lower band: a learnt capacity too small for the reserve never holds requests with nothing running', () => {
  const { table, eps } = tableOf(2, () => fresh(0));
  // Step-granular arrivals read as queueing taught a capacity of 1; the reserve rounds up to that one slot.
  for (const e of eps) Object.assign(e, { batchCapacity: 1, loadAt: Date.now(), load: { waiting: 0, running: 0, kvUsage: 0 } });
  const a = new Admission('m', table, { ...CFG, reserved_share: 0.2 }, STALE);
  const now = Date.now();
  assert.is(a.saturated(now, 1), null, 'nothing runs, nothing waits, nothing is in flight: the request goes');
  eps[0]!.inflight = 1;
  eps[1]!.inflight = 1;
  assert.match(a.saturated(now, 1) ?? '', /no free batch slot/, 'once each replica has one in flight, the learnt figure holds again');
  eps[1]!.inflight = 0;
  Object.assign(eps[1]!, { load: { waiting: 1, running: 0, kvUsage: 0 } });
  assert.match(a.saturated(now, 1) ?? '', /no free batch slot/, 'a replica with a queue is not idle');
  // Unknown size and an adaptive limit at its floor: the same holds.
  const u = tableOf(1, () => fresh(0));
  Object.assign(u.eps[0]!, { batchCapacity: null, loadAt: Date.now(), load: { waiting: 0, running: 0, kvUsage: 0 } });
  assert.ok(new Admission('m', u.table, { ...CFG, reserved_share: 0.2 }, STALE).saturated(now, 1) === null);
});

test('lower bands fill every slot outside the reserve: the first band\'s requests in flight count once, as what the engine holds', () => {
  const { table, eps } = tableOf(1, () => fresh(0));
  const now = Date.now();
  Object.assign(eps[0]!, { batchCapacity: 10, loadAt: now, load: { waiting: 0, running: 6, kvUsage: 0.3 } });
  const a = new Admission('m', table, { ...CFG, reserved_share: 0.2 }, STALE);
  assert.ok(a.tryAdmit(0, now) && a.tryAdmit(0, now), 'two platinum in flight, among the 6 the engine runs');
  const bronze = a.tryAdmit(1, now);
  assert.ok(bronze, 'bronze: 8 slots outside the reserve of 2, 6 taken');
  bronze.release(now);
  eps[0]!.load = { waiting: 0, running: 8, kvUsage: 0.3 };
  assert.match(a.saturated(now, 1) ?? '', /no free batch slot on 1 replicas beyond the reserved ones/, '8 of 8 taken: the 2 reserved stay free');
  assert.is(a.saturated(now, 0), null, 'for the first band');
});

test('aging: a lower band held back by the reserve a steady first band keeps free goes once it has aged into the first band', async () => {
  const { table, eps } = tableOf(1, () => fresh(0));
  const now = Date.now();
  Object.assign(eps[0]!, { batchCapacity: 10, loadAt: now, load: { waiting: 0, running: 8, kvUsage: 0.3 }, inflight: 8, inflightAtLoad: 8 });
  const a = new Admission('m', table, { ...CFG, reserved_share: 0.2, aging_ms: 400 }, STALE);
  for (let i = 0; i < 8; i++) assert.ok(a.tryAdmit(0, now));
  let released = false;
  void a.wait(1, now, new AbortController().signal).then((p) => (released = p !== null));
  a.release(now + 300);
  await new Promise(setImmediate);
  assert.not.ok(released, 'bronze may fill 8 slots, and 8 run');
  a.release(now + 450);
  await new Promise(setImmediate);
  assert.ok(released, 'after one aging period it counts as platinum, and platinum has room');
});

test('lower bands keep off a replica while a first-band prompt there waits for its first token, and go at that first token', async () => {
  const { table, eps } = tableOf(2, () => ({ ...fresh(0), batchCapacity: 16 }));
  const a = new Admission('m', table, CFG, STALE);
  const top = [0, 1].map(() => a.tryAdmit(0, NOW)!);
  const leases = eps.map((e) => table.lease(e, NOW, 'first-band'));
  assert.equal(
    eps.map((e) => e.topPrefilling),
    [1, 1],
  );
  assert.match(a.saturated(NOW, 1) ?? '', /no free batch slot/, 'each replica prefills a first-band prompt: a long lower-band one sent now would share its step');
  assert.is(a.saturated(NOW, 0), null, 'the first band itself is not held by it');
  assert.is(a.firstBandGateMs, Infinity, 'no first token seen yet: the gate holds until the first chunk');
  const ac = new AbortController();
  const waiting = a.wait(1, NOW, ac.signal);
  leases[1]!.started(true);
  assert.is(eps[1]!.topPrefilling, 0, "the engine's first chunk ends the prefill");
  top[1]!.firstToken(NOW + 5);
  const admitted = await waiting;
  assert.ok(admitted !== null, 'released at that first token, not at the next request to end');
  admitted.release(NOW + 5);
  assert.is(a.firstBandGateMs, 10, 'twice the idle first token (5 ms) once one is seen');
  eps[1]!.ready = false;
  assert.match(a.saturated(NOW + 9, 1) ?? '', /no free batch slot/, 'e0 alone: still prefilling 9 ms after its first-band send');
  assert.is(a.saturated(NOW + 10, 1), null, 'the gate bounded: a first band slow to its first token does not hold the replica for good');
  eps[1]!.ready = true;
  leases[0]!.release(NOW + 6);
  assert.is(eps[0]!.topPrefilling, 0, 'a request that ends before its first chunk ends its prefill too');
  leases[0]!.release(NOW + 7);
  assert.is(eps[0]!.topPrefilling, 0, 'once');
  for (const p of top) p.release(NOW + 7);
  leases[1]!.release(NOW + 7);
  assert.equal(
    eps.map((e) => [e.inflight, e.topInflight, e.topPrefilling]),
    [
      [0, 0, 0],
      [0, 0, 0],
    ],
  );
});

test('engines of unknown size: once the first band has been seen, lower bands go while the router has fewer in flight than the adaptive limit', async () => {
  const { table, eps } = tableOf(1, () => fresh(0));
  Object.assign(eps[0]!, { loadAt: Date.now(), load: { waiting: 0, running: 1, kvUsage: 0.1 }, inflight: 3, inflightAtLoad: 1 });
  const a = new Admission('m', table, CFG, STALE);
  const now = Date.now();
  assert.is(a.saturated(now, 1), null, 'no first-band traffic: the engine taken to run twice the 1 it was seen running, and 1 may wait');
  eps[0]!.inflight = 4;
  assert.match(a.saturated(now, 1) ?? '', /no free batch slot/, 'a burst within one poll interval is counted against that guess: 2 would wait');
  eps[0]!.inflight = 3;
  a.tryAdmit(0, now)!.release(now);
  eps[0]!.inflight = 4;
  assert.match(a.saturated(now, 1) ?? '', /no free batch slot/, 'first band seen: 4 in flight, the limit a new engine starts at');
  eps[0]!.inflight = 3;
  const top = [0, 1, 2].map(() => a.tryAdmit(0, now)!);
  top[0]!.firstToken(now + 10);
  eps[0]!.inflight = 4;
  assert.match(a.saturated(now, 1) ?? '', /no free batch slot/, 'a fast first token with no lower-band request waiting says nothing of the limit');
  eps[0]!.inflight = 3;
  // The limit in use and a lower-band request waiting on it: fast samples now test it.
  const ac = new AbortController();
  const waiting = a.wait(1, now, ac.signal);
  for (const p of top.slice(1)) p.firstToken(now + 10);
  ac.abort();
  const admitted = await waiting;
  assert.ok(admitted !== null, 'the first tokens raised the limit, and the lower-band request waiting on it went as they came');
  admitted.release(now + 10);
  for (const p of top) p.release(now + 10);
  eps[0]!.inflight = 4;
  assert.is(a.saturated(now, 1), null, 'fast first tokens raise the limit');
  eps[0]!.load = { waiting: 1, running: 4, kvUsage: 0.1 };
  eps[0]!.inflightAtLoad = 4;
  assert.match(a.saturated(now, 1) ?? '', /no free batch slot/, 'an engine seen queueing takes nothing more of the lower bands');
});

test('engines of unknown size: a first band arriving at engines a batch job already fills holds the lower bands at what the engine ran of theirs, not at 4', () => {
  const { table, eps } = tableOf(1, () => ({ loadAt: Date.now(), load: { waiting: 0, running: 40, kvUsage: 0.3 }, inflight: 40, inflightAtLoad: 40, peakRunning: 40 }));
  const a = new Admission('m', table, CFG, STALE);
  const now = Date.now();
  assert.is(a.saturated(now, 1), null, 'the batch job alone: held only by the waiting target');
  const top = a.tryAdmit(0, now)!;
  assert.is(a.adaptiveLimit, 40, 'the limit starts at the 40 in flight');
  eps[0]!.inflight = 41;
  assert.match(a.saturated(now, 1) ?? '', /no free batch slot/, "nothing more of the lower bands while the first band's request runs beside them");
  eps[0]!.inflight = 39;
  assert.is(a.saturated(now, 1), null, 'one ended: the next goes, without waiting for the engine to drain to 4');
  top.release(now);
  const queued = tableOf(1, () => ({ loadAt: Date.now(), load: { waiting: 1, running: 40, kvUsage: 0.3 }, inflight: 41, inflightAtLoad: 41, peakRunning: 40 }));
  const b = new Admission('m', queued.table, CFG, STALE);
  b.tryAdmit(0, now)!.release(now);
  assert.is(b.adaptiveLimit, 40, 'an engine queueing one of the 41 sent: the limit starts at the 40 it ran, and what waits drains first');
});

test('engines of unknown size: a batch job\'s collected first tokens grow the adaptive limit in slow start, each by its replica\'s share', async () => {
  const { table, eps } = tableOf(2, () => ({ loadAt: Date.now(), load: { waiting: 0, running: 3, kvUsage: 0.1 }, inflight: 3, inflightAtLoad: 3 }));
  const a = new Admission('m', table, CFG, STALE);
  const now = Date.now();
  const top = a.tryAdmit(0, now)!;
  const batch = Array.from({ length: 10 }, () => a.tryAdmit(1, now, 0, 'collected')!);
  for (const e of eps) e.inflight = 4;
  const ac = new AbortController();
  const waiting = a.wait(1, now, ac.signal);
  assert.is(a.queue.depth(1), 1, 'a lower-band request waits on the limit');
  batch[0]!.firstToken(now + 10);
  assert.is(a.adaptiveLimit, 4, 'no interactive first token yet: nothing to judge a collected one against');
  top.firstToken(now + 10);
  assert.is(a.adaptiveLimit, 4, 'a streamed first token: a sample, half a request on two replicas (4.5)');
  for (const p of batch.slice(1, 5)) p.firstToken(now + 20);
  assert.is(a.adaptiveLimit, 5, 'four fast collected first tokens on two replicas: one more (5.5), half of half a request each');
  eps[1]!.load = { waiting: 1, running: 4, kvUsage: 0.1 };
  for (const p of batch.slice(5, 9)) p.firstToken(now + 20);
  assert.is(a.adaptiveLimit, 5, 'while an engine is seen queueing, fast ones are no acknowledgement: it may be full');
  eps[1]!.load = { waiting: 0, running: 4, kvUsage: 0.1 };
  batch[9]!.firstToken(now + 5_000);
  assert.is(a.adaptiveLimit, 5, 'a slow one (a long prompt, or queueing) is no acknowledgement');
  ac.abort();
  assert.is(await waiting, null);
  for (const p of [top, ...batch]) p.release(now + 5_000);
});

test('a queue held by a scrape of engines of unknown size asks for a fresh one, though nothing the router sends or ends changes', async () => {
  const asked: string[] = [];
  const table = new EndpointTable({ connectTimeoutMs: 1_000, health: HEALTH, refresh: { ms: 100, kvCeiling: 0.9, ask: (id) => asked.push(id) } });
  const e = table.add({ id: 'e0', url: 'http://127.0.0.1:20000', models: ['m'], weight: 1, priority: 0, pool: null });
  e.ready = true;
  e.reason = null;
  const now = Date.now();
  table.applyLoad('e0', now, { waiting: 0, running: 0, kvUsage: 0 }, null);
  const a = new Admission('m', table, CFG, STALE);
  // A batch job meets an idle engine: the scrape says it runs nothing, so 2 (twice the 1
  // it is taken to run) plus the 2 of the waiting target go, and the next one waits.
  const leases = [0, 1, 2, 3].map(() => {
    assert.ok(a.tryAdmit(1, now), 'goes');
    return table.lease(e, now);
  });
  const ac = new AbortController();
  const waiting = a.wait(1, now, ac.signal);
  asked.length = 0;
  a.release(now + 10);
  assert.equal(asked, [], 'the scrape is 10 ms old: not yet');
  a.release(now + 30);
  assert.equal(asked, ['e0'], 'held behind a scrape older than the refresh interval (25 ms: it may be overfilled): a new one is asked');
  ac.abort();
  assert.is(await waiting, null);
  a.release(now + 300);
  assert.equal(asked, ['e0'], 'nothing queued: nothing asked');
  for (const l of leases) l.release(now + 300);
  await table.close();
});

test('prefill pacing: lower-band prompts being prefilled stay within the budget per replica, and the next go as they reach their first token', async () => {
  // Plenty of free slots, so only pacing holds bronze back.
  const { table, eps } = tableOf(2, () => ({ batchCapacity: 64, loadAt: Date.now(), load: { waiting: 0, running: 0, kvUsage: 0.1 } }));
  const a = new Admission('m', table, { ...CFG, prefill_tokens_per_replica: 2_000 }, STALE);
  const now = Date.now();
  firstBandSeen(a, now);
  assert.ok(a.paces(1) && !a.paces(0), 'the first band is never paced');
  const first = a.tryAdmit(1, now, 1_500)!;
  const second = a.tryAdmit(1, now, 1_500)!;
  assert.ok(first && second, '3,000 tokens of the 4,000 two replicas allow');
  assert.match(a.holdReason(1, now, 1_500) ?? '', /3000 prompt tokens of lower bands being prefilled; 1500 more would pass the budget of 4000 across the replicas taking traffic/);
  assert.ok(a.tryAdmit(0, now, 1_500), 'platinum is not held by bronze prefills');
  const released: number[] = [];
  const ac = new AbortController();
  const waits = [a.wait(1, now, ac.signal, 1_500), a.wait(1, now, ac.signal, 1_500)].map((w, i) => w.then((p) => (released.push(i), p)));
  a.release(now);
  await new Promise(setImmediate);
  assert.equal(released, [], 'the wave waits for the prefills ahead of it');
  first.firstToken(now);
  first.firstToken(now);
  await new Promise(setImmediate);
  assert.equal(released, [0], 'one first token lets one more in, not the whole wave (a first token counted once)');
  second.release(now);
  await new Promise(setImmediate);
  assert.equal(released, [0, 1], 'a request that ends before its first token gives its tokens back too');
  const later = await Promise.all(waits);
  for (const p of later) p!.release(now);
  const big = a.tryAdmit(1, now, 9_000);
  assert.ok(big, 'a prompt over the whole budget still goes when nothing else is being prefilled');
  big.release(now);
  const off = new Admission('m', table, CFG, STALE);
  assert.not.ok(off.paces(1), 'a budget of 0: no pacing');
  eps[1]!.ready = false;
  const one = a.tryAdmit(1, now, 1_500)!;
  assert.match(a.holdReason(1, now, 1_000) ?? '', /budget of 2000/, 'the budget follows the replicas taking traffic');
  one.release(now);
});

test('a paced prompt whose answer is not streamed counts as prefilled once a streamed first token would have come, not until its whole answer', async () => {
  // Two in flight: half the limit a new engine starts at, in use, so a fast sample grows
  // it while a lower-band request waits.
  const { table } = tableOf(1, () => ({ batchCapacity: 64, loadAt: Date.now(), load: { waiting: 0, running: 0, kvUsage: 0.1 }, inflight: 2 }));
  const a = new Admission('m', table, { ...CFG, prefill_tokens_per_replica: 2_000 }, STALE);
  const t0 = Date.now();
  firstBandSeen(a, t0);
  const early = a.tryAdmit(1, t0, 1_500, 'whole')!;
  assert.match(a.holdReason(1, t0 + 10_000, 1_000) ?? '', /1500 prompt tokens/, 'before any streamed first token: counted until its answer');
  early.firstToken(t0 + 10_000);
  assert.is(a.adaptiveLimit, 4, 'an answer not streamed says nothing of the time to first token: the limit did not move');
  early.release(t0 + 10_000);
  const streamed = a.tryAdmit(1, t0, 10)!;
  const ac = new AbortController();
  const waiting = a.wait(1, t0, ac.signal);
  streamed.firstToken(t0 + 100);
  ac.abort();
  // Its prefill done, the streamed request let the waiting one go: it is done with too.
  (await waiting)?.release(t0 + 100);
  streamed.release(t0 + 100);
  assert.is(a.adaptiveLimit, 5, 'a streamed first token is a sample');
  const held = a.tryAdmit(1, t0 + 1_000, 500)!;
  const batch = a.tryAdmit(1, t0 + 1_000, 1_500, 'whole')!;
  assert.match(a.holdReason(1, t0 + 1_050, 1) ?? '', /2000 prompt tokens/, 'within the streamed time to first token: still being prefilled');
  assert.match(a.holdReason(1, t0 + 1_100, 1_600) ?? '', /500 prompt tokens/, 'past it: taken as prefilled');
  batch.firstToken(t0 + 1_500);
  batch.release(t0 + 1_500);
  assert.match(a.holdReason(1, t0 + 1_500, 1_600) ?? '', /500 prompt tokens/, 'its answer and end give nothing back twice');
  held.release(t0 + 1_500);
});

test('a collected answer gives its prompt back at its real first token, and is no sample of the adaptive limit', () => {
  const { table } = tableOf(1, () => ({ batchCapacity: 64, loadAt: Date.now(), load: { waiting: 0, running: 0, kvUsage: 0.1 }, inflight: 2 }));
  const a = new Admission('m', table, { ...CFG, prefill_tokens_per_replica: 2_000 }, STALE);
  const t0 = Date.now();
  firstBandSeen(a, t0);
  const batch = a.tryAdmit(1, t0, 1_500, 'collected')!;
  assert.match(a.holdReason(1, t0 + 5_000, 1_000) ?? '', /1500 prompt tokens/, 'counted until its first token, however long');
  batch.firstToken(t0 + 5_000);
  assert.is(a.holdReason(1, t0 + 5_000, 1_000), null, 'given back at its first token, while its answer goes on');
  assert.is(a.adaptiveLimit, 4, 'a batch prompt read against the interactive baseline would be noise: not sampled');
  const next = a.tryAdmit(1, t0 + 5_000, 1_500, 'collected')!;
  batch.release(t0 + 9_000);
  assert.match(a.holdReason(1, t0 + 9_000, 600) ?? '', /1500 prompt tokens/, 'its end gives nothing back twice');
  next.release(t0 + 9_000);
});

// A flood meeting free slots on engines whose step budget was configured put ~56 long
// prompts into each at once; a first-band request then waited behind ~11 steps of their
// prefill (the engine bounds each step, not what it admitted ahead of the arrival).
test('an engine is paced at the configured budget, or at twice its own step budget where that is less', () => {
  const cfg = { ...CFG, prefill_tokens_per_replica: 4_096 };
  const { table, eps } = tableOf(2, () => ({ batchCapacity: 64, loadAt: Date.now(), load: { waiting: 0, running: 0, kvUsage: 0.1 }, stepBudget: null }));
  const a = new Admission('m', table, cfg, STALE);
  const now = Date.now();
  firstBandSeen(a, now);
  const wave = Array.from({ length: 16 }, () => a.tryAdmit(1, now, 500));
  assert.ok(wave.every((p) => p !== null), "8,000 tokens: within the two replicas' 4,096 each");
  const budget = () => Number(/the budget of (\d+)/.exec(a.holdReason(1, now, 500) ?? '')?.[1]);
  assert.is(budget(), 8_192, 'the 17th waits for first tokens');
  eps[1]!.stepBudget = 1_024;
  assert.is(budget(), 4_096 + 2_048, 'a step budget of 1,024: a step of prefill under way and the next one waiting');
  eps[1]!.stepBudget = 2_048;
  assert.is(budget(), 8_192, 'two steps of 2,048 are the configured budget');
  eps[1]!.stepBudget = 8_192;
  assert.is(budget(), 8_192, "vLLM's default step budget: ours, half a step of prefill queued ahead of a first-band arrival");
  eps[1]!.stepBudget = 0;
  assert.is(budget(), 8_192, 'an engine without chunked prefill prefills all it admits in one step: the configured budget bounds that step');
  eps[1]!.ready = false;
  assert.is(budget(), 4_096, 'only the engines taking traffic count');
  eps[0]!.ready = false;
  assert.is(budget(), 4_096, 'none taking traffic: one replica of the configured budget, not none');
  for (const p of wave) p!.release(now);
  assert.is(a.holdReason(1, now, 500), null);
});

test("prefill pacing is each replica's: the budget summed over replicas does not send a second prompt to one replica while the other is kept clear for the first band", async () => {
  const { table, eps } = tableOf(2, () => ({ batchCapacity: 64, loadAt: Date.now(), load: { waiting: 0, running: 0, kvUsage: 0.1 } }));
  const a = new Admission('m', table, { ...CFG, prefill_tokens_per_replica: 2_000 }, STALE);
  const now = Date.now();
  const bronze = a.tryAdmit(1, now, 1_500)!;
  const sent = table.lease(eps[1]!, now, 'streamed-lower', bronze.promptTokens);
  assert.is(eps[1]!.lowerPrefilling, 1_500, 'counted on the replica it was sent to');
  const top = a.tryAdmit(0, now)!;
  const topLease = table.lease(eps[0]!, now, 'first-band');
  assert.match(
    a.holdReason(1, now, 1_500) ?? '',
    /every replica clear of first-band prompts is prefilling lower-band prompts up to its budget/,
    '3,000 of the 4,000 both replicas allow, but e0 is kept clear for the first band and e1 would prefill both at once',
  );
  const ac = new AbortController();
  const waiting = a.wait(1, now, ac.signal, 1_500);
  sent.started(true);
  assert.is(eps[1]!.lowerPrefilling, 0, "the engine's first chunk ends the prefill on its replica");
  bronze.firstToken(now + 3);
  const next = await waiting;
  assert.ok(next !== null, 'released at that first token');
  const again = table.lease(eps[1]!, now + 3, 'collected-lower', next.promptTokens);
  const whole = table.lease(eps[1]!, now + 3, 'plain', 1_500);
  assert.is(eps[1]!.lowerPrefilling, 1_500, 'a collected answer counts until its first chunk; one sent whole (its first chunk is its end) not at all');
  again.release(now + 4);
  again.release(now + 4);
  assert.is(eps[1]!.lowerPrefilling, 0, 'ended before its first chunk: given back, once');
  for (const l of [whole, sent, topLease]) l.release(now + 4);
  for (const p of [bronze, next, top]) p.release(now + 4);
  assert.equal(
    eps.map((e) => [e.inflight, e.lowerPrefilling, e.topPrefilling]),
    [
      [0, 0, 0],
      [0, 0, 0],
    ],
  );
});

test('without a first band in use nothing is paced, but every prompt is counted, so pacing holds from the first first-band request on', () => {
  const { table } = tableOf(1, () => ({ batchCapacity: 64, loadAt: Date.now(), load: { waiting: 0, running: 0, kvUsage: 0.1 } }));
  const a = new Admission('m', table, { ...CFG, prefill_tokens_per_replica: 2_000 }, STALE);
  const now = Date.now();
  const wave = Array.from({ length: 4 }, () => a.tryAdmit(1, now, 1_500));
  assert.ok(wave.every((p) => p !== null), 'a batch job alone: no interactive request to protect, and batch throughput is not spent on pacing');
  assert.not.ok(a.firstBandActive(now));
  const top = a.tryAdmit(0, now)!;
  assert.ok(a.firstBandActive(now));
  assert.match(a.holdReason(1, now, 1_500) ?? '', /6000 prompt tokens of lower bands being prefilled/, 'the prompts admitted before count');
  top.release(now);
  assert.ok(a.firstBandActive(now + 60_000), 'for a minute after the last one');
  assert.not.ok(a.firstBandActive(now + 60_001));
  assert.is(a.holdReason(1, now + 60_001, 1_500), null);
  for (const p of wave) p!.release(now);
});

test('a request not paced holds nothing back, even while a prompt over the whole budget is being prefilled', () => {
  const { table } = tableOf(1, () => ({ batchCapacity: 64, loadAt: Date.now(), load: { waiting: 0, running: 0, kvUsage: 0.1 } }));
  const a = new Admission('m', table, { ...CFG, prefill_tokens_per_replica: 2_000 }, STALE);
  const now = Date.now();
  firstBandSeen(a, now);
  const big = a.tryAdmit(1, now, 9_000)!;
  assert.ok(big);
  assert.match(a.holdReason(1, now, 10) ?? '', /9000 prompt tokens/);
  const none = a.tryAdmit(1, now, 0);
  assert.ok(none, 'no tokens to prefill (an empty or fully cached prompt): not held by pacing');
  none!.release(now);
  big.release(now);
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
