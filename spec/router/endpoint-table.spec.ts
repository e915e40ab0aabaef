import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import type { EngineSettings, StepTotals } from '../../src/messages/endpoints.js';
import { batchCapacitySource, EndpointTable } from '../../src/router/endpoint-table.js';
import { HEALTH } from './helpers.js';

const spec = (id: string, port: number, models = ['m']) => ({ id, url: `http://127.0.0.1:${port}`, models, weight: 1, priority: 0, pool: null });

test('an update keeps the live state of surviving endpoints, drains removed ones and adds new ones', async () => {
  const table = new EndpointTable({ connectTimeoutMs: 1_000, health: HEALTH });
  const a = table.add(spec('a', 1));
  const b = table.add(spec('b', 2));
  a.inflight = 3;
  a.ready = true;
  for (let i = 0; i < 5; i++) a.health.failed(0);
  const result = table.update([{ ...spec('a', 1, ['m', 'n']), weight: 2 }, spec('c', 3)]);
  assert.equal(result, { added: ['c'], removed: ['b'] });
  assert.is(table.get('a'), a, 'the same state object');
  assert.is(a.inflight, 3);
  assert.is(a.ready, true);
  assert.is(a.health.breakerAt(0), 'open');
  assert.is(a.weight, 2);
  assert.equal(table.forModel('n').map((e) => e.id), ['a']);
  assert.equal(table.forModel('m').map((e) => e.id), ['a', 'c']);
  assert.is(b.draining, true, 'a request still holding it sees it draining');
  assert.is(table.get('b'), undefined);
  await table.close();
});

test('an endpoint whose URL changed is a new endpoint: its old state does not carry over', async () => {
  const table = new EndpointTable({ connectTimeoutMs: 1_000, health: HEALTH });
  const old = table.add(spec('a', 1));
  old.inflight = 2;
  assert.equal(table.update([spec('a', 9)]), { added: ['a'], removed: ['a'] });
  assert.is.not(table.get('a'), old);
  assert.is(table.get('a')!.inflight, 0);
  await table.close();
});

test('the router\'s own traffic asks for a fresh scrape between polls, at most one per refresh interval, none while nothing changes', async () => {
  const asked: string[] = [];
  const table = new EndpointTable({ connectTimeoutMs: 1_000, health: HEALTH, refresh: { ms: 100, kvCeiling: 0.9, ask: (id) => asked.push(id) } });
  const a = table.add(spec('a', 1));
  table.applyLoad('a', 1_000, { running: 0, waiting: 0, kvUsage: 0 }, null);
  const first = table.lease(a, 1_050);
  assert.equal(asked, [], 'the scrape is 50 ms old: fresh enough');
  const second = table.lease(a, 1_100);
  assert.equal(asked, ['a'], 'a request started on a scrape 100 ms old');
  first.release(1_150);
  assert.equal(asked, ['a'], 'asked 50 ms ago, no answer yet: not asked again');
  table.applyLoad('a', 1_160, { running: 1, waiting: 1, kvUsage: 0 }, null);
  second.release(1_240);
  assert.equal(asked, ['a'], 'the answer is 80 ms old');
  table.lease(a, 1_260).release(1_270);
  assert.equal(asked, ['a', 'a'], 'a request ending counts as a change too');
  assert.is(a.inflight, 0);
  table.applyLoad('a', 1_100, { running: 9, waiting: 9, kvUsage: 0 }, null);
  assert.equal(a.load, { running: 1, waiting: 1, kvUsage: 0 }, 'an older scrape arriving late is dropped');
  table.applyLoad('a', 1_300, null, '/metrics answered 500');
  assert.equal([a.load?.running, a.loadError], [1, '/metrics answered 500'], 'a failed scrape keeps the last load and says why');
  await table.close();
});

test('no scrape between polls of an engine that runs only the router\'s requests, well inside its batch', async () => {
  const asked: string[] = [];
  const table = new EndpointTable({ connectTimeoutMs: 1_000, health: HEALTH, refresh: { ms: 100, kvCeiling: 0.9, ask: (id) => asked.push(id) } });
  const a = table.add(spec('a', 1));
  table.applyLoad('a', 0, { running: 0, waiting: 0, kvUsage: 0 }, null);
  const held = [1, 2, 3, 4].map(() => table.lease(a, 1));
  table.applyLoad('a', 2, { running: 4, waiting: 0, kvUsage: 0.2 }, null);
  asked.length = 0;
  let t = 2;
  // One request ends and another starts, a refresh interval after the last change.
  const churn = (): void => {
    held.shift()!.release((t += 200));
    held.push(table.lease(a, t));
  };
  churn();
  churn();
  assert.equal(asked, [], 'unknown batch, holding the 4 it was seen running: the router sent all it runs');
  held.push(table.lease(a, (t += 200)));
  assert.equal(asked, ['a'], 'holding more than the engine was ever seen running: it may be queueing them');
  table.applyLoad('a', (t += 1), { running: 5, waiting: 0, kvUsage: 0.9 }, null);
  churn();
  assert.equal(asked, ['a', 'a'], 'its KV cache at the ceiling');
  table.applyLoad('a', (t += 1), { running: 5, waiting: 1, kvUsage: 0.2 }, null);
  churn();
  assert.equal(asked, ['a', 'a', 'a'], 'queueing');
  table.applyLoad('a', (t += 1), { running: 8, waiting: 0, kvUsage: 0.2 }, null);
  churn();
  assert.equal(asked, ['a', 'a', 'a', 'a'], 'running more than the router sent: others share it, and only a scrape shows them');
  a.batchCapacity = 16;
  table.applyLoad('a', (t += 1), { running: 5, waiting: 0, kvUsage: 0.2 }, null);
  held.push(table.lease(a, (t += 1)), table.lease(a, t), table.lease(a, t));
  churn();
  assert.equal(asked.length, 4, 'a batch of 16 holding 8');
  held.push(table.lease(a, (t += 200)));
  assert.equal(asked.length, 5, 'holding 9, past half its batch');
  for (const l of held) l.release(t);
  await table.close();
});

test('an engine of unknown size holding more than it was seen running is scraped four times as often', async () => {
  const asked: number[] = [];
  const table = new EndpointTable({ connectTimeoutMs: 1_000, health: HEALTH, refresh: { ms: 100, kvCeiling: 0.9, ask: () => asked.push(t) } });
  let t = 0;
  const a = table.add(spec('a', 1));
  table.applyLoad('a', 0, { running: 4, waiting: 0, kvUsage: 0.1 }, null);
  const held = [1, 2, 3, 4, 5].map(() => table.lease(a, (t += 1)));
  for (t = 10; t <= 60; t += 5) held.push(table.lease(a, t));
  assert.equal(asked, [25, 50], 'holding more than the 4 it was seen running: a scrape every 25 ms, not 100');
  table.applyLoad('a', 60, { running: 16, waiting: 4, kvUsage: 0.3 }, null);
  table.applyLoad('a', 61, { running: 16, waiting: 4, kvUsage: 0.3 }, null);
  assert.is(a.batchCapacity, 16, 'learnt');
  for (t = 65; t <= 260; t += 5) {
    held.shift()!.release(t);
    held.push(table.lease(a, t));
  }
  assert.equal(asked.slice(2), [165], 'its batch known: back to one every 100 ms');
  for (const l of held) l.release(t);
  await table.close();
});

test('an engine back after being down long enough to have restarted has its batch capacity learnt again', async () => {
  const table = new EndpointTable({ connectTimeoutMs: 1_000, health: HEALTH });
  const e = table.add(spec('a', 1));
  const probe = (ready: boolean, waiting: number, running: number, at: number) =>
    table.apply({ id: 'a', ready, reason: ready ? null : 'down', models: ['m'], maxModelLen: null, at, load: ready ? { waiting, running, kvUsage: 0.5 } : null, loadError: ready ? null : 'down' });
  probe(true, 0, 12, 0);
  assert.is(e.peakRunning, 12, 'not queueing: the capacity is unknown, but 12 slots are known to exist');
  probe(true, 3, 16, 1);
  probe(true, 2, 16, 2);
  assert.is(e.batchCapacity, 16, 'two scrapes in a row with requests waiting');
  probe(false, 0, 0, 1_000);
  probe(true, 1, 8, 2_000);
  assert.is(e.batchCapacity, 16, 'a probe that failed for a second is not a restart');
  probe(false, 0, 0, 3_000);
  probe(false, 0, 0, 8_000);
  assert.is(e.batchCapacity, 16, 'kept while it is down: nothing else is known');
  probe(true, 1, 8, 13_000);
  assert.is(e.batchCapacity, null, 'back after 10 s down: forgotten');
  assert.is(e.peakRunning, 8, 'the most seen running is forgotten with it, then read again from the new scrape');
  probe(true, 1, 8, 13_100);
  assert.is(e.batchCapacity, 8, 'and learnt again, smaller');
  await table.close();
});

test('once the step time is known, requests that only arrived during the last steps are not taken for a full batch', async () => {
  const table = new EndpointTable({ connectTimeoutMs: 1_000, health: HEALTH });
  const e = table.add(spec('a', 1));
  const scrape = (at: number, waiting: number, running: number, itlSeconds: number, tokens: number) => table.applyLoad('a', at, { waiting, running, kvUsage: 0.3, itl: { sum: itlSeconds, count: tokens } }, null);
  // A flood reaching an idle engine: requests wait before its first tokens came out.
  scrape(900, 3, 3, 1, 100);
  scrape(950, 5, 6, 1, 100);
  assert.is(e.batchCapacity, null, 'its step time unknown yet (no tokens between the scrapes): not read for a capacity');
  scrape(1_000, 0, 4, 1, 100);
  scrape(1_100, 0, 4, 2, 200);
  assert.is(e.stepMs, 10, '1 s of inter-token time over 100 tokens: 10 ms a step');
  // A flood: the router starts 3 requests in the 20 ms before each scrape.
  const leases = [];
  for (const at of [1_185, 1_190, 1_195, 1_285, 1_290, 1_295]) leases.push(table.lease(e, at));
  scrape(1_200, 3, 6, 2.5, 250);
  scrape(1_300, 3, 9, 3, 300);
  assert.is(e.batchCapacity, null, 'the 3 waiting are the 3 that arrived in the last two steps: no capacity learnt');
  for (const at of [1_310, 1_320, 1_330, 1_340, 1_350, 1_360, 1_370, 1_380]) leases.push(table.lease(e, at));
  scrape(1_400, 6, 9, 3.5, 350);
  scrape(1_500, 4, 9, 4, 400);
  assert.is(e.batchCapacity, 9, 'more waiting than could have just arrived, two scrapes in a row: full at 9');
  for (const l of leases) l.release(1_600);
  await table.close();
});

/** vLLM v1's tokens-per-step histogram as an engine accumulates it: its fixed bucket bounds, cumulative counts. */
class StepHistogram {
  private static readonly bounds = [1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384];
  private tokens = 0;
  private count = 0;
  private readonly counts = StepHistogram.bounds.map(() => 0);

  /** `steps` more steps of `perStep` tokens each. */
  add(steps: number, perStep: number): StepTotals {
    this.tokens += steps * perStep;
    this.count += steps;
    StepHistogram.bounds.forEach((b, i) => {
      if (perStep <= b) this.counts[i]! += steps;
    });
    return this.totals();
  }

  totals(): StepTotals {
    return { tokens: this.tokens, count: this.count, buckets: StepHistogram.bounds.map((b, i) => [b, this.counts[i]!] as const) };
  }
}

/** Scrapes of engine `a` publishing vLLM's step histogram: `steps` more steps of `perStep` tokens since the last, 10 ms each. */
function stepScrapes(table: EndpointTable): (at: number, waiting: number, running: number, steps: number, perStep: number) => void {
  const h = new StepHistogram();
  return (at, waiting, running, steps, perStep) => {
    const totals = h.add(steps, perStep);
    table.applyLoad('a', at, { waiting, running, kvUsage: 0.3, itl: { sum: totals.count / 100, count: totals.count }, steps: totals }, null);
  };
}

test('a queue the step budget explains is not a full batch: requests wait beside free slots while every step spends the budget', async () => {
  const table = new EndpointTable({ connectTimeoutMs: 1_000, health: HEALTH });
  const e = table.add(spec('a', 1));
  const scrape = stepScrapes(table);
  scrape(0, 0, 0, 1, 100);
  scrape(100, 0, 4, 10, 100);
  // A flood of long prompts: 8192 tokens a step, requests waiting, the engine running 20, then 30.
  scrape(1_000, 40, 20, 90, 8192);
  scrape(2_000, 30, 30, 100, 8192);
  scrape(2_010, 30, 30, 0, 0);
  assert.is(e.batchCapacity, null, 'waiting on the budget, not on a slot: nothing learnt (a scrape within the same step neither)');
  // Full: steps are mostly decodes, the queue stays.
  scrape(3_000, 20, 64, 100, 700);
  assert.is(e.batchCapacity, 64, 'full at 64 once its steps no longer come near the budget: one scrape shows it');
  scrape(4_000, 22, 64, 100, 650);
  assert.is(e.batchCapacity, 64);
  await table.close();
});

test('one scrape of vLLM shows a full batch where no step since the last came near the budget and the engine runs its most', async () => {
  const table = new EndpointTable({ connectTimeoutMs: 1_000, health: HEALTH });
  const e = table.add(spec('a', 1));
  const scrape = stepScrapes(table);
  scrape(0, 0, 0, 1, 16);
  // A burst of prompts: steps of up to 8192 tokens, then it runs 20.
  scrape(1_000, 0, 20, 50, 8192);
  scrape(2_000, 5, 12, 100, 900);
  assert.is(e.batchCapacity, null, 'a queue beside fewer running than it ran before: a cohort just ended, or a preemption, not the batch');
  scrape(3_000, 0, 16, 100, 16);
  scrape(4_000, 4, 20, 100, 6000);
  assert.is(e.batchCapacity, null, 'a step since the last scrape may have spent the budget (its bucket is the budget\'s): not on one scrape');
  scrape(4_500, 0, 20, 50, 40);
  scrape(5_000, 3, 20, 50, 40);
  assert.is(e.batchCapacity, 20, 'steps of 64 tokens or less, 20 running as at its most, 3 left waiting: the slots held them');
  await table.close();
});

test('an engine without vLLM\'s step histogram must show its queue twice', async () => {
  const table = new EndpointTable({ connectTimeoutMs: 1_000, health: HEALTH });
  const e = table.add(spec('a', 1));
  const scrape = scrapes(table);
  scrape(0, 16, 0);
  scrape(3, 16, 1_000);
  assert.is(e.batchCapacity, null, 'once: it may count arrivals as waiting the moment they come');
  scrape(3, 16, 2_000);
  assert.is(e.batchCapacity, 16);
  await table.close();
});

test('a full batch of decodes fills its steps evenly, but that is not a spent budget', async () => {
  const table = new EndpointTable({ connectTimeoutMs: 1_000, health: HEALTH });
  const e = table.add(spec('a', 1));
  // 32 running, one token each a step: every step in the bucket of 32, none larger.
  const scrape = (at: number, waiting: number, count: number) => table.applyLoad('a', at, { waiting, running: 32, kvUsage: 0.3, itl: { sum: (count * 32) / 100, count: count * 32 }, steps: steps(count, 32) }, null);
  scrape(0, 0, 10);
  scrape(1_000, 12, 110);
  scrape(2_000, 12, 210);
  assert.is(e.budgetBound, false);
  assert.is(e.batchCapacity, 32);
  await table.close();
});

test('steps that never reached vLLM\'s smallest budget do not show the budget', async () => {
  const table = new EndpointTable({ connectTimeoutMs: 1_000, health: HEALTH });
  const e = table.add(spec('a', 1));
  // 16-token prompts reaching an engine running 1: each step a prefill of 16, none larger.
  const scrape = (at: number, waiting: number, count: number) => table.applyLoad('a', at, { waiting, running: 1, kvUsage: 0.1, itl: { sum: count / 100, count }, steps: steps(count, 16) }, null);
  scrape(0, 0, 10);
  scrape(1_000, 17, 110);
  scrape(2_000, 17, 210);
  assert.is(e.budgetBound, false, 'not a spent budget of 16');
  assert.is(e.batchCapacity, 1);
  await table.close();
});

/** `count` steps of `perStep` tokens each since the engine started. */
function steps(count: number, perStep: number): StepTotals {
  return new StepHistogram().add(count, perStep);
}

/** A ready probe of engine `a` with its scraped `waiting` and `running`, taken at `at`. */
function scrapes(table: EndpointTable): (waiting: number, running: number, at: number) => void {
  return (waiting, running, at) => table.apply({ id: 'a', ready: true, reason: null, models: ['m'], maxModelLen: null, at, load: { waiting, running, kvUsage: 0.3 }, loadError: null });
}

test('requests waiting beside free slots do not teach a smaller batch than the engine was seen running', async () => {
  const table = new EndpointTable({ connectTimeoutMs: 1_000, health: HEALTH });
  const e = table.add(spec('a', 1));
  const probe = scrapes(table);
  probe(0, 14, 0);
  // A step's token budget spent on long prompts, or a cohort of equal answers just ended.
  probe(9, 3, 1_000);
  probe(7, 2, 2_000);
  assert.is(e.batchCapacity, 14, 'at least the 14 it ran');
  probe(4, 16, 3_000);
  assert.is(e.batchCapacity, 16, 'and more once it runs more');
  await table.close();
});

test('a learnt capacity the engine runs near with nothing waiting is probed upwards; a probe that finds the engine full falls back, and the next waits twice as long', async () => {
  const table = new EndpointTable({ connectTimeoutMs: 1_000, health: HEALTH });
  const e = table.add(spec('a', 1));
  const probe = scrapes(table);
  // An engine of 90 slots that a burst of long prompts made wait on its step budget at 64.
  probe(30, 60, 0);
  probe(20, 64, 100);
  assert.is(e.batchCapacity, 64, 'learnt from two queued scrapes');
  probe(0, 58, 200);
  assert.is(e.batchCapacity, 64, 'just learnt: not probed yet');
  probe(0, 40, 5_100);
  assert.is(e.batchCapacity, 64, 'far below it: nothing says it could run more');
  let t = 5_200;
  const seen: number[] = [];
  // The lower bands fill what the capacity leaves them, a tenth of it reserved.
  for (; t < 7_000 && e.batchCapacity! < 100; t += 100) {
    probe(0, Math.min(90, e.batchCapacity! - Math.ceil(e.batchCapacity! / 10)), t);
    seen.push(e.batchCapacity!);
  }
  assert.equal(seen.slice(0, 3), [68, 73, 78], 'near it with nothing waiting: a sixteenth more per scrape');
  assert.ok(e.batchCapacity! > 90, `probed past the engine's 90: ${e.batchCapacity}`);
  probe(6, 90, t);
  probe(4, 90, (t += 100));
  assert.is(e.batchCapacity, 90, 'queueing: back to the most it ran');
  probe(0, 88, (t += 100));
  assert.is(e.batchCapacity, 96, 'that probe found slots (it ran 90, not 64): the next goes at once');
  probe(6, 90, (t += 100));
  probe(4, 90, (t += 100));
  assert.is(e.batchCapacity, 90, 'this one found none');
  probe(0, 88, (t += 100));
  assert.is(e.batchCapacity, 90, 'so the next waits');
  probe(0, 88, (t += 4_900));
  assert.is(e.batchCapacity, 96, 'then one');
  probe(5, 90, (t += 100));
  probe(5, 90, (t += 100));
  assert.is(e.batchCapacity, 90);
  probe(0, 88, (t += 9_900));
  assert.is(e.batchCapacity, 90, 'the next waits twice as long');
  probe(0, 88, (t += 200));
  assert.is(e.batchCapacity, 96);
  probe(7, 70, (t += 100));
  probe(5, 75, (t += 100));
  assert.is(e.batchCapacity, 90, 'waiting beside free slots takes back what no scrape showed it running, no more');
  await table.close();
});

test('a configured batch size is known from the start, and neither scrapes nor a restart override it', async () => {
  const table = new EndpointTable({ connectTimeoutMs: 1_000, health: HEALTH });
  const e = table.add({ ...spec('a', 1), batchSize: 32 });
  assert.is(e.batchCapacity, 32, 'before any scrape: admission has it for the first request');
  const probe = (ready: boolean, waiting: number, running: number, at: number) =>
    table.apply({ id: 'a', ready, reason: ready ? null : 'down', models: ['m'], maxModelLen: null, at, load: ready ? { waiting, running, kvUsage: 0.5 } : null, loadError: ready ? null : 'down' });
  probe(true, 3, 20, 1);
  probe(true, 3, 20, 2);
  assert.is(e.batchCapacity, 32, 'queueing at 20 running (KV-bound) does not shrink it');
  probe(false, 0, 0, 1_000);
  probe(true, 0, 0, 20_000);
  assert.is(e.batchCapacity, 32, 'back after a restart: still what the config says');
  table.update([{ ...spec('a', 1), batchSize: 64 }]);
  assert.is(e.batchCapacity, 64, 'a reload that changes it applies at once');
  await table.close();
});

test('settings the engine publishes win over the config, survive updates of the config, and feed the batch capacity at once', async () => {
  const table = new EndpointTable({ connectTimeoutMs: 1_000, health: HEALTH });
  const e = table.add({ ...spec('a', 1), batchSize: 32, stepBudget: 8192 });
  const probe = (at: number, settings?: EngineSettings | null, running = 0, waiting = 0) =>
    table.apply({ id: 'a', ready: true, reason: null, models: ['m'], maxModelLen: null, at, load: { waiting, running, kvUsage: 0.1 }, loadError: null, ...(settings !== undefined && { settings }) });
  assert.equal([e.batchCapacity, batchCapacitySource(e)], [32, 'config']);
  probe(1, { batchSize: 48, stepBudget: 0, enginePriority: 'higher-first' });
  assert.equal([e.batchSize, e.batchCapacity, batchCapacitySource(e), e.stepBudget, e.enginePriority], [48, 48, 'engine', 0, 'higher-first'], 'the engine knows how it runs; the config may be stale');
  probe(2);
  assert.is(e.batchCapacity, 48, 'a probe that did not read them changes nothing');
  table.update([{ ...spec('a', 1), batchSize: 64 }]);
  assert.equal([e.batchCapacity, e.stepBudget, e.enginePriority], [48, 0, 'higher-first'], 'a reload of the config does not override what the engine said');
  assert.equal(e.configured, { batchSize: 64, stepBudget: null, enginePriority: null });
  probe(3, null);
  assert.equal([e.batchCapacity, batchCapacitySource(e), e.stepBudget, e.enginePriority], [64, 'config', null, null], 'an engine (restarted) that publishes nothing: the config again');
  await table.close();
});

test('a published batch size stands where nothing is configured, and learning does not move it', async () => {
  const table = new EndpointTable({ connectTimeoutMs: 1_000, health: HEALTH });
  const e = table.add(spec('a', 1));
  const probe = (at: number, waiting: number, running: number, settings?: EngineSettings | null) =>
    table.apply({ id: 'a', ready: true, reason: null, models: ['m'], maxModelLen: null, at, load: { waiting, running, kvUsage: 0.1 }, loadError: null, ...(settings !== undefined && { settings }) });
  assert.equal([e.batchCapacity, batchCapacitySource(e)], [null, null]);
  probe(1, 0, 0, { batchSize: 16, stepBudget: null, enginePriority: null });
  assert.equal([e.batchCapacity, batchCapacitySource(e)], [16, 'engine'], 'known before the first flood, not learnt from it');
  // SGLang's lagged gauges: what a scrape shows running while requests wait can be far below the batch.
  probe(1_000, 9, 7);
  probe(2_000, 8, 7);
  assert.is(e.batchCapacity, 16, 'a lagged scrape does not teach a smaller batch');
  await table.close();
});

test("a model's context is the longest its ready endpoints listed; an engine down keeps what it said, but does not count", async () => {
  const table = new EndpointTable({ connectTimeoutMs: 1_000, health: HEALTH });
  table.add(spec('a', 1));
  table.add(spec('b', 2));
  const probe = (id: string, ready: boolean, maxModelLen: number | null) =>
    table.apply({ id, ready, reason: ready ? null : 'down', models: ['m'], maxModelLen, at: 1, load: null, loadError: null });
  assert.is(table.maxModelLen('m'), null, 'nothing listed yet');
  probe('a', true, 4096);
  probe('b', true, 32768);
  assert.is(table.maxModelLen('m'), 32768);
  probe('b', false, null);
  assert.is(table.get('b')!.maxModelLen, 32768);
  assert.is(table.maxModelLen('m'), 4096, 'only ready endpoints count');
  probe('b', true, 8192);
  assert.is(table.maxModelLen('m'), 8192, 'an engine back with another setting is believed');
  assert.is(table.maxModelLen('other'), null);
  await table.close();
});

test.run();
