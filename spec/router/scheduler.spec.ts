import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { BUILTIN_ROUTING_PROFILES } from '../../src/config/routing-profiles.js';
import type { ScorerName } from '../../src/config/types.js';
import type { EndpointState } from '../../src/router/endpoint-table.js';
import { PrefixIndex } from '../../src/router/scheduler/prefix-index.js';
import { buildProfiles } from '../../src/router/scheduler/profiles.js';
import { Scheduler } from '../../src/router/scheduler/scheduler.js';
import { createScorers } from '../../src/router/scheduler/scorers.js';
import type { Profile, RouteRequest } from '../../src/router/scheduler/types.js';
import { hashPrefix } from '../../src/tasks/prefix-hash.js';
import { tableOf } from './helpers.js';

const NOW = 1_000_000;
const STALE = 5_000;

function setup(only?: Partial<Record<ScorerName, number>>) {
  const index = new PrefixIndex(10_000);
  const scorers = createScorers({ staleAfterMs: STALE, kvCeiling: 0.9, prefixIndex: index });
  const configured = only ? [{ name: 'only', scorers: { queue: 0, kv: 0, inflight: 0, prefix: 0, session: 0, weight: 0, ...only } }] : [];
  const profiles = buildProfiles(configured, scorers);
  return { index, profiles, profile: profiles.get(only ? 'only' : 'chat')! };
}

const req = (over: Partial<RouteRequest> = {}): RouteRequest => ({ model: 'm', prefix: null, session: null, tried: [], now: NOW, ...over });
const pickMany = (s: Scheduler, eps: readonly EndpointState[], p: Profile, n: number, r: RouteRequest = req()): Map<string, number> => {
  const counts = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    const e = s.pick(eps, r, p)!;
    counts.set(e.id, (counts.get(e.id) ?? 0) + 1);
  }
  return counts;
};

test('filters: not ready, draining, already tried and a blocked breaker are out, each with its reason', () => {
  const { eps } = tableOf(5);
  eps[0]!.ready = false;
  eps[0]!.reason = 'unreachable: ECONNREFUSED';
  eps[1]!.draining = true;
  for (let i = 0; i < 5; i++) eps[2]!.health.failed(NOW);
  const r = req({ tried: [eps[3]!] });
  const s = new Scheduler();
  assert.is(s.pick(eps, r, setup().profile)!.id, 'e4');
  assert.equal(
    s.rejections(eps, r).map((x) => `${x.id}: ${x.reason}`),
    ['e0: unreachable: ECONNREFUSED', 'e1: draining: removed from the endpoint list', 'e2: circuit breaker open for 10 s more after 5 failures', 'e3: already failed this request'],
  );
  eps[4]!.ready = false;
  assert.is(s.pick(eps, r, setup().profile), null);
});

test('only the highest priority among usable endpoints takes traffic; lower ones are spares', () => {
  const { eps } = tableOf(3, (i) => ({ priority: i === 2 ? 1 : 0 }));
  const s = new Scheduler();
  assert.equal([...pickMany(s, eps, setup().profile, 50).keys()], ['e2']);
  eps[2]!.ready = false;
  assert.equal([...pickMany(s, eps, setup().profile, 50).keys()].sort(), ['e0', 'e1']);
});

/** A seeded generator, so a statistical spec gives the same counts on every run. */
const seeded = (seed: number) => (): number => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);

test('ties are broken at random, so equal endpoints share the load evenly', () => {
  const { eps } = tableOf(4);
  const counts = pickMany(new Scheduler(undefined, seeded(1)), eps, setup().profile, 4_000);
  for (const e of eps) {
    const n = counts.get(e.id) ?? 0;
    assert.ok(n >= 900 && n <= 1_100, `${e.id} got ${n} of 4000`);
  }
  // The draw decides, not the order: a draw that always keeps the current best leaves the
  // first, one that always takes the newcomer the last.
  assert.equal([...pickMany(new Scheduler(undefined, () => 0.999), eps, setup().profile, 20).keys()], ['e0']);
  assert.equal([...pickMany(new Scheduler(undefined, () => 0), eps, setup().profile, 20).keys()], ['e3']);
});

test('a tie among the best is split evenly, whatever lost before it', () => {
  // e0 and e1 tie first, then both lose to the idle e2 and e3: the draw among those two
  // must start afresh, not carry the odds of the earlier tie.
  const { eps } = tableOf(4, (i) => ({ inflight: [3, 3, 0, 0][i]! }));
  const counts = pickMany(new Scheduler(undefined, seeded(9)), eps, setup({ inflight: 1 }).profile, 2_000);
  assert.equal([...counts.keys()].sort(), ['e2', 'e3']);
  for (const id of ['e2', 'e3']) {
    const n = counts.get(id)!;
    assert.ok(n >= 800 && n <= 1_200, `${id} got ${n} of 2000`);
  }
});

test('in-flight: the least loaded wins, and a one-request difference matters more when idle', () => {
  const { eps } = tableOf(3, (i) => ({ inflight: [4, 1, 2][i]! }));
  const s = new Scheduler();
  const { profile } = setup({ inflight: 1 });
  assert.is(s.pick(eps, req(), profile)!.id, 'e1');
  assert.equal(s.explain(eps[1]!), { candidates: 3, inflight: 1, total: 1 });
});

test('queue and KV scores come from fresh scrapes; stale ones score as the worst fresh one; all stale abstains', () => {
  const { eps } = tableOf(3, (i) => ({ load: { waiting: [0, 9, 5][i]!, running: 1, kvUsage: [0.9, 0.1, 0.5][i]! }, loadAt: NOW - 100 }));
  const s = new Scheduler();
  assert.is(s.pick(eps, req(), setup({ queue: 1 }).profile)!.id, 'e0', 'shortest queue');
  assert.is(s.pick(eps, req(), setup({ kv: 1 }).profile)!.id, 'e1', 'most KV headroom');
  eps[0]!.loadAt = NOW - STALE - 1; // e0's idle queue is no longer known
  assert.is(s.pick(eps, req(), setup({ queue: 1 }).profile)!.id, 'e2', 'the stale endpoint is not trusted to be idle');
  for (const e of eps) e.loadAt = NOW - STALE - 1;
  // Every load stale: only in-flight counts (always kept at a minimum weight) decide.
  eps[1]!.inflight = 0;
  eps[0]!.inflight = eps[2]!.inflight = 3;
  assert.is(s.pick(eps, req(), setup({ queue: 1 }).profile)!.id, 'e1');
});

test('a stale endpoint scores as the worst fresh one, not as the value it borrowed; a scrape exactly staleAfterMs old is fresh', () => {
  const { queue } = createScorers({ staleAfterMs: STALE, kvCeiling: 0.9, prefixIndex: new PrefixIndex(10) });
  const { eps } = tableOf(3, (i) => ({ load: { waiting: [5, 2, 0][i]!, running: 1, kvUsage: 0.2 }, loadAt: NOW - 100 }));
  const out = new Float64Array(3);
  eps[2]!.loadAt = NOW - STALE - 1; // its idle queue is no longer known
  queue.score(eps, req(), out);
  assert.equal([...out], [0.5, 1, 0.5]);
  eps[2]!.loadAt = NOW - STALE;
  queue.score(eps, req(), out);
  assert.equal([...out], [1 / 6, 1 / 3, 1]);
});

test('the queue score is the queue now: what was sent or finished since the scrape moves it', () => {
  // e0 was scraped queueing 5, then a wave of 11 completions let its queue in; e1 was
  // scraped idle and has been sent 20 since, beyond its 16 slots.
  const { eps } = tableOf(2, (i) => ({ load: { waiting: [5, 0][i]!, running: 16, kvUsage: 0.3 }, loadAt: NOW - 80, batchCapacity: 16 }));
  eps[0]!.inflightAtLoad = 21;
  eps[0]!.inflight = 10;
  eps[1]!.inflightAtLoad = 16;
  eps[1]!.inflight = 36;
  const s = new Scheduler();
  assert.is(s.pick(eps, req(), setup({ queue: 1 }).profile)!.id, 'e0', 'the drained engine, not the one that looked idle');
  // Capacity not learnt: a queueing engine's queue still moves with what finished.
  eps[0]!.batchCapacity = eps[1]!.batchCapacity = null;
  eps[1]!.load = { waiting: 2, running: 16, kvUsage: 0.3 };
  eps[1]!.inflight = eps[1]!.inflightAtLoad;
  assert.is(s.pick(eps, req(), setup({ queue: 1 }).profile)!.id, 'e0', 'e0 drained (5 − 11 sent back), e1 still has 2 waiting');
});

test('prefix affinity: a prompt goes where its longest prefix was served, and a continued conversation follows it', () => {
  const { eps } = tableOf(4);
  const { index, profile } = setup({ prefix: 1 });
  const s = new Scheduler();
  const system = 'You are a careful assistant. '.repeat(40);
  const turn1 = hashPrefix({ text: `${system}user: hello`.padEnd(1600, '.'), blockChars: 64 });
  const turn2 = hashPrefix({ text: `${system}user: hello`.padEnd(1600, '.') + 'assistant: hi there, and more'.repeat(20), blockChars: 64 });
  index.record(turn1, 'e2');
  assert.is(s.pick(eps, req({ prefix: turn2 }), profile)!.id, 'e2');
  const other = hashPrefix({ text: 'Something else entirely. '.repeat(80), blockChars: 64 });
  assert.equal(new Set(pickMany(s, eps, profile, 200, req({ prefix: other })).keys()).size, 4, 'an unseen prefix has no pull');
});

test('chat profile: affinity wins against a load difference, until the cached engine queues', () => {
  const { eps } = tableOf(2, () => ({ load: { waiting: 0, running: 4, kvUsage: 0.3 }, loadAt: NOW }));
  const { index, profile } = setup();
  const s = new Scheduler();
  const h = hashPrefix({ text: 'shared system prompt and history '.repeat(60), blockChars: 64 });
  index.record(h, 'e0');
  eps[0]!.inflight = 1;
  eps[1]!.inflight = 0;
  assert.is(s.pick(eps, req({ prefix: h }), profile)!.id, 'e0');
  eps[0]!.inflight = 12;
  assert.is(s.pick(eps, req({ prefix: h }), profile)!.id, 'e0', 'busier, but not queueing: the cache is worth more');
  eps[0]!.load = { waiting: 6, running: 16, kvUsage: 0.8 };
  assert.is(s.pick(eps, req({ prefix: h }), profile)!.id, 'e1', 'no hotspot on a queueing engine');
});

test('chat profile: a conversation stays on the engine holding its history over one holding only the shared system prompt, until that engine queues', () => {
  const fresh = { waiting: 0, running: 2, kvUsage: 0.3 };
  const { eps } = tableOf(2, () => ({ load: { ...fresh }, loadAt: NOW }));
  const { index, profile } = setup();
  const s = new Scheduler();
  const block = (text: string) => hashPrefix({ text, blockChars: 64 });
  // A system prompt of 50 blocks, ~90% of the prompt, as with a long shared instruction
  // block. e1 served turn 1; e0 served another conversation of the same application.
  const system = 'You are a careful assistant for one application. '.repeat(64);
  const turn1 = `${system}user: how do I reset my password?`.padEnd(system.length + 128, ' ');
  const turn2 = `${turn1}assistant: open the settings page and choose reset.`.padEnd(turn1.length + 128, ' ') + 'user: and then?'.padEnd(64, ' ');
  index.record(block(`${system}user: something else`.padEnd(system.length + 128, ' ')), 'e0');
  index.record(block(turn1), 'e1');
  const load = (e: EndpointState, inflight: number, waiting: number) => {
    e.inflight = e.inflightAtLoad = inflight;
    e.load = { ...fresh, waiting };
  };
  const pickTurn2 = () => s.pick(eps, req({ prefix: block(turn2) }), profile)!.id;

  load(eps[0]!, 0, 0);
  load(eps[1]!, 1, 0);
  assert.is(pickTurn2(), 'e1', 'one more in flight is cheaper than prefilling the history again');
  load(eps[1]!, 4, 0);
  assert.is(pickTurn2(), 'e1', 'busier, but not queueing: the history is worth more');
  load(eps[1]!, 4, 3);
  assert.is(pickTurn2(), 'e0', 'a queue costs more than the history: the conversation moves');
});

test('the first band goes to the replica with the most free slots by the router\'s own count, whatever the scrape says; prefix affinity decides among equal room', () => {
  // The scrape is fresh and shows both idle: a flood sent since filled e0 beyond its batch.
  const { eps } = tableOf(3, () => ({ batchCapacity: 16, load: { waiting: 0, running: 2, kvUsage: 0.1 }, loadAt: NOW, inflightAtLoad: 2 }));
  const { index, profile } = setup();
  const s = new Scheduler();
  const h = hashPrefix({ text: 'shared system prompt and history '.repeat(60), blockChars: 64 });
  index.record(h, 'e0');
  eps[0]!.inflight = 15;
  eps[1]!.inflight = 12;
  eps[2]!.inflight = 14;
  assert.is(s.pick(eps, req({ prefix: h }), profile)!.id, 'e0', 'lower bands: the cache wins while the engine is not seen queueing');
  const first = req({ prefix: h, room: { unknownCapacity: null } });
  assert.equal([...pickMany(s, eps, profile, 50, first).keys()], ['e1'], 'the first band: where 4 slots are free, not 1 or 2');
  eps[0]!.inflight = 12;
  assert.equal([...pickMany(s, eps, profile, 50, first).keys()], ['e0'], 'equal room: the cached prefix decides');
  eps[0]!.inflight = eps[1]!.inflight = 18;
  eps[2]!.inflight = 17;
  assert.equal([...pickMany(s, eps, profile, 50, first).keys()], ['e2'], 'every batch full: where fewest of ours wait');
});

test('room on engines of unknown size counts against the adaptive limit; with none, room is not compared', () => {
  const { eps } = tableOf(2, (i) => ({ batchCapacity: i === 0 ? 16 : null }));
  const { profile } = setup({ session: 1 });
  const s = new Scheduler();
  eps[0]!.inflight = 10;
  eps[1]!.inflight = 6;
  const toE0 = (r: Partial<RouteRequest>): RouteRequest => {
    // A session key whose rendezvous hash picks e0, so the scorers alone would send it there.
    for (let k = 0; ; k++) if (s.pick(eps, req({ session: `s${k}` }), profile)!.id === 'e0') return req({ session: `s${k}`, ...r });
  };
  assert.is(s.pick(eps, toE0({ room: { unknownCapacity: 8 } }), profile)!.id, 'e0', '6 free of 16 beat 2 free of an adaptive 8');
  assert.is(s.pick(eps, toE0({ room: { unknownCapacity: 16 } }), profile)!.id, 'e1', '10 free of an adaptive 16 beat 6 free');
  assert.is(s.pick(eps, toE0({ room: { unknownCapacity: null } }), profile)!.id, 'e0', 'a capacity unknown: the scorers decide');
});

test('a lower band keeps off replicas prefilling a first-band prompt sent within the gate, unless every replica is', () => {
  const { eps } = tableOf(2);
  const { profile } = setup({ session: 1 });
  const s = new Scheduler();
  const toE0 = (r: Partial<RouteRequest>): RouteRequest => {
    // A session key whose rendezvous hash picks e0, so the scorers alone would send it there.
    for (let k = 0; ; k++) if (s.pick(eps, req({ session: `s${k}` }), profile)!.id === 'e0') return req({ session: `s${k}`, ...r });
  };
  const lower = toE0({ firstBandGateMs: 20 });
  Object.assign(eps[0]!, { topPrefilling: 1, topSentAt: NOW - 5 });
  assert.is(s.pick(eps, lower, profile)!.id, 'e1', 'e0 prefills a first-band prompt sent 5 ms ago: the lower band goes where none is');
  assert.is(s.pick(eps, { ...lower, firstBandGateMs: null }, profile)!.id, 'e0', 'a request of no lower band is not moved');
  eps[0]!.topSentAt = NOW - 20;
  assert.is(s.pick(eps, lower, profile)!.id, 'e0', 'past the gate: a first band slow to its first token does not hold the replica for good');
  Object.assign(eps[0]!, { topSentAt: NOW - 5 });
  Object.assign(eps[1]!, { topPrefilling: 2, topSentAt: NOW - 1 });
  assert.is(s.pick(eps, lower, profile)!.id, 'e0', 'every replica prefilling: the scorers decide, as nothing would be left');
  eps[0]!.topPrefilling = 0;
  assert.is(s.pick(eps, lower, profile)!.id, 'e0');
});

test("a paced lower-band prompt goes to the replica with the fewest such prompt tokens awaiting a first token, after keeping clear of the first band's", () => {
  const { eps } = tableOf(3);
  const { profile } = setup({ session: 1 });
  const s = new Scheduler();
  const toE0 = (r: Partial<RouteRequest>): RouteRequest => {
    for (let k = 0; ; k++) if (s.pick(eps, req({ session: `s${k}` }), profile)!.id === 'e0') return req({ session: `s${k}`, ...r });
  };
  const paced = toE0({ firstBandGateMs: 20, prefillTokens: 1_500 });
  eps[0]!.lowerPrefilling = 1_500;
  eps[1]!.lowerPrefilling = 400;
  eps[2]!.lowerPrefilling = 0;
  assert.is(s.pick(eps, paced, profile)!.id, 'e2', 'e0 would prefill two prompts in one step; e2 prefills none');
  assert.is(s.pick(eps, { ...paced, prefillTokens: 0 }, profile)!.id, 'e0', 'a request not paced is not moved');
  Object.assign(eps[2]!, { topPrefilling: 1, topSentAt: NOW - 5 });
  assert.is(s.pick(eps, paced, profile)!.id, 'e1', 'e2 prefills a first-band prompt: the fewest of the others');
  eps[1]!.lowerPrefilling = 1_500;
  const counts = pickMany(s, eps, profile, 200, { ...paced, session: null });
  assert.equal([...counts.keys()].sort(), ['e0', 'e1'], 'a tie is the scorers\' and the tie-break\'s');
});

test('session affinity is stable per key, spread across keys, and moves only the sessions of a removed endpoint', () => {
  const { eps } = tableOf(4);
  const { profile } = setup({ session: 1 });
  const s = new Scheduler();
  const where = (list: EndpointState[], key: string): string => s.pick(list, req({ session: key }), profile)!.id;
  const before = new Map<string, string>();
  for (let k = 0; k < 400; k++) before.set(`user-${k}`, where(eps, `user-${k}`));
  for (const [k, id] of before) assert.is(where(eps, k), id);
  const spread = new Map<string, number>();
  for (const id of before.values()) spread.set(id, (spread.get(id) ?? 0) + 1);
  for (const e of eps) assert.ok((spread.get(e.id) ?? 0) > 50, `${e.id}: ${spread.get(e.id)}`);
  const without = eps.filter((e) => e.id !== 'e3');
  for (const [k, id] of before) if (id !== 'e3') assert.is(where(without, k), id, `${k} stays`);
});

test('weight: the configured capacity breaks otherwise equal scores', () => {
  const { eps } = tableOf(2, (i) => ({ weight: i === 0 ? 1 : 3 }));
  assert.is(new Scheduler().pick(eps, req(), setup({ weight: 1 }).profile)!.id, 'e1');
});

test('every built-in profile resolves with its weights, a configured one replaces its namesake, and in-flight is never switched off', () => {
  const scorers = createScorers({ staleAfterMs: STALE, kvCeiling: 0.9, prefixIndex: new PrefixIndex(10) });
  const configured = [
    { name: 'sticky', scorers: { queue: 0, kv: 0, inflight: 0, prefix: 0, session: 1, weight: 0 } },
    { name: 'batch', scorers: { queue: 0, kv: 0, inflight: 0.5, prefix: 0, session: 0, weight: 0 }, band: 'bronze' },
  ];
  const profiles = buildProfiles(configured, scorers);
  const weights = (name: string): Record<string, number> => Object.fromEntries(profiles.get(name)!.terms.map((t) => [t.scorer.name, t.weight]));
  assert.equal([...profiles.keys()], [...BUILTIN_ROUTING_PROFILES.map((p) => p.name), 'sticky']);
  assert.equal(weights('chat'), { queue: 2, kv: 1, inflight: 2, prefix: 3, session: 1, weight: 0.2 }, 'a weight above the minimum is kept');
  assert.equal(weights('long-context'), { queue: 1, kv: 2, inflight: 1, prefix: 1.5, weight: 0.2 });
  assert.equal(weights('batch'), { inflight: 0.5 }, 'the configured batch profile replaced the built-in one');
  assert.is(profiles.get('batch')!.band, 'bronze');
  assert.is(profiles.get('chat')!.band, null);
  assert.equal(weights('sticky'), { inflight: 0.1, session: 1 }, 'in-flight switched off is raised to the minimum');
});

// Randomised invariants over tables of every shape.
test('invariants: the pick passes every filter, has the top usable priority, and is never a tried endpoint', () => {
  const rand = seeded(42);
  const { profiles, index } = setup();
  const s = new Scheduler(undefined, rand);
  for (let round = 0; round < 500; round++) {
    const n = 1 + Math.floor(rand() * 12);
    const { eps } = tableOf(n, () => ({
      ready: rand() > 0.2,
      draining: rand() < 0.1,
      priority: Math.floor(rand() * 3),
      inflight: Math.floor(rand() * 10),
      weight: 0.5 + rand() * 3,
      load: rand() < 0.7 ? { waiting: Math.floor(rand() * 20), running: 4, kvUsage: rand() } : null,
      loadAt: NOW - Math.floor(rand() * 2 * STALE),
    }));
    for (const e of eps) if (rand() < 0.15) for (let i = 0; i < 5; i++) e.health.failed(NOW);
    const tried = eps.filter(() => rand() < 0.2);
    const prefix = rand() < 0.5 ? hashPrefix({ text: `p${round % 7} `.repeat(300), blockChars: 64 }) : null;
    if (prefix && rand() < 0.5) index.record(prefix, eps[Math.floor(rand() * n)]!.id);
    const profile = [...profiles.values()][round % profiles.size]!;
    const r = req({ prefix, tried, session: rand() < 0.3 ? `s${round}` : null });
    const usable = eps.filter((e) => e.ready && !e.draining && !tried.includes(e) && e.health.blocked(NOW) === null);
    const got = s.pick(eps, r, profile);
    if (usable.length === 0) {
      assert.is(got, null);
      assert.is(s.rejections(eps, r).length, n, 'every endpoint has its reason');
      continue;
    }
    assert.ok(got && usable.includes(got), `round ${round}: the pick is usable`);
    assert.is(got.priority, Math.max(...usable.map((e) => e.priority)), `round ${round}: top priority`);
  }
});

test.run();
