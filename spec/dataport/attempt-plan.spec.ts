import * as assert from 'uvu/assert';
import { AttemptPlan } from '../../src/dataport/attempt-plan.js';
import { Admission } from '../../src/router/admission/admission.js';
import type { ModelRoute } from '../../src/dataport/model-routes.js';
import { LlmgwError } from '../../src/errors.js';
import type { UsageRecord } from '../../src/messages/accounting.js';
import { RetryBudget } from '../../src/router/retry-budget.js';
import { PrefixIndex } from '../../src/router/scheduler/prefix-index.js';
import { buildProfiles } from '../../src/router/scheduler/profiles.js';
import { Scheduler } from '../../src/router/scheduler/scheduler.js';
import { createScorers } from '../../src/router/scheduler/scorers.js';
import { ADMISSION, tableOf } from '../router/helpers.js';
import { test } from '../support/uvu.js';

const NOW = 1_000_000;
const FAILED = new LlmgwError('LLMGW_UPSTREAM_FAILED', 'endpoint failed: other side closed');

function setup(n: number, budget = new RetryBudget(20, 3), maxAttempts = 3) {
  const { table, eps } = tableOf(n);
  const prefixIndex = new PrefixIndex(100);
  const profile = buildProfiles([], createScorers({ staleAfterMs: 5_000, kvCeiling: 0.9, prefixIndex })).get('batch')!;
  const route: ModelRoute = { entry: { name: 'm', aliases: [], fallbacks: [], streamFromEngine: true }, chain: ['m'], profile, admission: null };
  const record = { id: 'r', attempts: 0, scheduleMicros: 0, endpoint: null, modelServed: null, fallback: false } as unknown as UsageRecord;
  const plan = new AttemptPlan({ table, scheduler: new Scheduler(), prefixIndex, budget, maxAttempts }, route, profile, null, null, record);
  return { plan, eps, budget, record };
}

test('a request that breaks two endpoints the same way reaches no third, and neither endpoint is blamed', () => {
  const { plan, eps } = setup(4);
  const first = plan.next(NOW)!;
  first.release(NOW);
  plan.failed(first, FAILED, 'connection dropped', NOW);
  const second = plan.next(NOW)!;
  assert.is.not(second.id, first.id);
  second.release(NOW);
  plan.failed(second, FAILED, 'connection dropped', NOW);
  assert.is(plan.next(NOW), null, 'not tried on a third endpoint');
  const err = plan.error(NOW);
  assert.is(err.code, 'LLMGW_REQUEST_POISONED');
  assert.match(err.message, new RegExp(`${first.id} and ${second.id}`));
  plan.done(NOW);
  for (const e of eps) assert.is(e.health.consecutiveFailures, 0, `${e.id} is not blamed`);
  for (const e of eps) assert.is(e.inflight, 0);
});

test('a failure held as suspect counts against its endpoint once the request is served elsewhere', () => {
  const { plan, eps } = setup(3);
  const first = plan.next(NOW)!;
  first.release(NOW);
  plan.failed(first, FAILED, 'status 500', NOW);
  assert.is(eps.find((e) => e.id === first.id)!.health.consecutiveFailures, 0, 'no verdict yet');
  const second = plan.next(NOW)!;
  plan.answered(NOW);
  second.succeeded();
  second.release(NOW);
  plan.done(NOW);
  assert.is(eps.find((e) => e.id === first.id)!.health.consecutiveFailures, 1, 'the endpoint that failed alone is blamed');
});

test('failures of different kinds are not poison: the request goes on, and each endpoint is blamed at the end', () => {
  const { plan, eps } = setup(3);
  const ways = ['status 500', 'connection dropped', 'status 502'];
  for (const way of ways) {
    const lease = plan.next(NOW)!;
    lease.release(NOW);
    plan.failed(lease, FAILED, way, NOW);
  }
  assert.is(plan.next(NOW), null, 'out of attempts');
  assert.is(plan.error(NOW).code, 'LLMGW_UPSTREAM_FAILED');
  plan.done(NOW);
  for (const e of eps) assert.is(e.health.consecutiveFailures, 1, e.id);
});

test('a failure that is plainly the endpoint (refused connection) counts at once and does not pair with a suspect', () => {
  const { plan } = setup(3);
  const a = plan.next(NOW)!;
  a.release(NOW);
  plan.failed(a, FAILED, 'connection dropped', NOW);
  const b = plan.next(NOW)!;
  b.failed(NOW);
  b.release(NOW);
  plan.failed(b, FAILED, null, NOW);
  assert.ok(plan.next(NOW), 'a third attempt is allowed');
});

test('retries in flight stay within the budget: beyond it a failed request is not retried', () => {
  const budget = new RetryBudget(20, 1);
  const plans = Array.from({ length: 5 }, () => setup(3, budget).plan);
  // Five requests in flight: 20% is one retry, and the floor is one.
  assert.is(budget.limit(), 1);
  const retried = plans.map((plan) => {
    const lease = plan.next(NOW)!;
    lease.release(NOW);
    plan.failed(lease, FAILED, null, NOW);
    return plan.next(NOW) !== null;
  });
  assert.equal(retried, [true, false, false, false, false]);
  assert.match(plans[1]!.error(NOW).message, /retry budget is spent \(1 retries in flight for 5 requests/);
  plans[0]!.done(NOW);
  assert.equal(budget.inFlight, { requests: 4, retries: 0 }, 'the retry slot comes back when its request ends');
  for (const p of plans.slice(1)) p.done(NOW);
  assert.equal(budget.inFlight, { requests: 0, retries: 0 });
});

test('a retry gives its slot back once its answer begins, not when its stream ends', () => {
  const budget = new RetryBudget(0, 1);
  const [a, b] = [setup(3, budget).plan, setup(3, budget).plan];
  const first = a.next(NOW)!;
  first.release(NOW);
  a.failed(first, FAILED, null, NOW);
  a.next(NOW);
  assert.equal(budget.inFlight.retries, 1);
  a.answered(NOW);
  assert.equal(budget.inFlight.retries, 0, 'the retry is streaming: its slot is free');
  const other = b.next(NOW)!;
  other.release(NOW);
  b.failed(other, FAILED, null, NOW);
  assert.ok(b.next(NOW), 'another request may retry meanwhile');
  a.done(NOW);
  b.done(NOW);
  assert.equal(budget.inFlight, { requests: 0, retries: 0 });
});

/**
 * Two replicas behind admission, the batch profile, and a weight scorer that prefers e0
 * by far, so that whatever sends a request to e1 is the rule under test.
 */
function withAdmission() {
  const { table, eps } = tableOf(2, (i) => ({ weight: i === 0 ? 100 : 1 }));
  const prefixIndex = new PrefixIndex(100);
  const profile = buildProfiles([], createScorers({ staleAfterMs: 5_000, kvCeiling: 0.9, prefixIndex })).get('batch')!;
  const admission = new Admission('m', table, ADMISSION, 5_000);
  const route: ModelRoute = { entry: { name: 'm', aliases: [], fallbacks: [], streamFromEngine: true }, chain: ['m'], profile, admission };
  const record = { id: 'r', attempts: 0, scheduleMicros: 0, endpoint: null, modelServed: null, fallback: false } as unknown as UsageRecord;
  const deps = { table, scheduler: new Scheduler(), prefixIndex, budget: new RetryBudget(20, 3), maxAttempts: 3 };
  return { eps, admission, route, record, deps, profile };
}

test('a first-band request goes to the replica with the most room, engines of unknown size counted against admission\'s adaptive limit', () => {
  const { eps, admission, route, record, deps, profile } = withAdmission();
  // The weight scorer outweighs one request more in flight; the adaptive limit starts at 4.
  eps[0]!.inflight = 2;
  eps[1]!.inflight = 1;
  const pick = (firstBand: boolean): string => {
    const plan = new AttemptPlan(deps, route, profile, null, null, record, firstBand ? 'first-band' : 'plain');
    const lease = plan.next(NOW)!;
    lease.release(NOW);
    plan.done(NOW);
    return lease.id;
  };
  assert.is(admission.adaptiveLimit, 4);
  assert.is(pick(false), 'e0', 'lower bands: the scorers decide');
  assert.is(pick(true), 'e1', 'the first band: 3 free of 4, not 2');
});

test('a paced lower-band prompt goes where the fewest such tokens await a first token, while a first band is in use and no engine holds its head', () => {
  const { eps, admission, route, record, deps, profile } = withAdmission();
  // The weight scorer sends everything to e0, where one paced prompt awaits its first token.
  eps[0]!.lowerPrefilling = 1_500;
  const pick = (now: number, headCached = false): { id: string; counted: number } => {
    const plan = new AttemptPlan(deps, route, profile, null, null, record, 'streamed-lower', 1_500, !headCached);
    const lease = plan.next(now)!;
    const counted = lease.endpoint.lowerPrefilling;
    lease.release(now);
    plan.done(now);
    return { id: lease.id, counted };
  };
  assert.equal(pick(NOW), { id: 'e0', counted: 3_000 }, 'no first band in use: the scorers decide, and the prompt is counted where it went');
  admission.tryAdmit(0, NOW)!.release(NOW);
  assert.equal(pick(NOW), { id: 'e1', counted: 1_500 }, 'a first band in use: e1, where none awaits');
  assert.is(pick(NOW, true).id, 'e0', 'a prompt whose head an engine is taken to hold follows its cache');
  assert.is(pick(NOW + 61_000).id, 'e0', 'a minute after the last first-band request: the scorers again');
  assert.equal(
    eps.map((e) => e.lowerPrefilling),
    [1_500, 0],
  );
});

test('a recalled attempt is no attempt: its endpoint may be tried again, no retry is spent, and it is not recalled twice', () => {
  const { table, eps } = tableOf(1);
  const prefixIndex = new PrefixIndex(100);
  const profile = buildProfiles([], createScorers({ staleAfterMs: 5_000, kvCeiling: 0.9, prefixIndex })).get('batch')!;
  const route: ModelRoute = { entry: { name: 'm', aliases: [], fallbacks: [], streamFromEngine: true }, chain: ['m'], profile, admission: null };
  const record = { id: 'r', attempts: 0, scheduleMicros: 0, endpoint: null, modelServed: null, fallback: false } as unknown as UsageRecord;
  const budget = new RetryBudget(0, 0);
  const plan = new AttemptPlan({ table, scheduler: new Scheduler(), prefixIndex, budget, maxAttempts: 1 }, route, profile, null, null, record, 'collected-lower');
  const first = plan.next(NOW)!;
  assert.equal(eps[0]!.recallable, [first]);
  first.whenRecalled(() => true);
  assert.ok(first.recall(NOW));
  plan.recalled(first);
  const again = plan.next(NOW);
  assert.ok(again, 'the same endpoint, with one attempt allowed and no retry budget');
  assert.is(record.attempts, 1);
  assert.equal(eps[0]!.recallable, [], 'sent again, it keeps its place');
  again.release(NOW);
  plan.done(NOW);
  assert.equal(budget.inFlight, { requests: 0, retries: 0 });
});

test('the budget grows with the requests in flight', () => {
  const budget = new RetryBudget(20, 3);
  assert.is(budget.limit(), 3, 'the floor');
  for (let i = 0; i < 100; i++) budget.entered();
  assert.is(budget.limit(), 20);
});

test.run();
