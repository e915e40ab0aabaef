// An engine's prefill cost, fitted on the cohorts of paced prompts whose first chunks
// come back together, and prefill pacing held to a time at that cost (a slow start until
// it is known) as well as to a token count.
import { test } from '../../support/uvu.js';
import * as assert from 'uvu/assert';
import { Admission, type Permit } from '../../../src/router/admission/admission.js';
import { pacingBudget } from '../../../src/router/admission/prefill-pacing.js';
import { PrefillRate } from '../../../src/router/admission/prefill-rate.js';
import { ADMISSION, tableOf } from '../helpers.js';
import { mulberry32 } from '../../support/rng.js';

const STALE = 5_000;

/**
 * Feeds `r` cohorts of `sizes[i]` tokens (each four prompts, sent 3 ms apart) from an
 * engine whose step waits `intercept(i)` ms beside the prefill and costs `usPerToken` µs
 * per prompt token; cohorts 1 s apart. Returns when the last cohort's chunks came.
 */
function cohorts(r: PrefillRate, sizes: readonly number[], usPerToken: number, intercept: (i: number) => number, start = 0): number {
  let t = start;
  for (const [i, size] of sizes.entries()) {
    t += 1_000;
    const lastSent = t + 9;
    const at = lastSent + intercept(i) + (size * usPerToken) / 1_000;
    for (let k = 0; k < 4; k++) r.firstChunk(t + 3 * k, at + k * 0.5, size / 4);
  }
  // Any later first chunk closes the last cohort.
  r.firstChunk(t + 500, t + 540, 0);
  return t;
}

test("the cost is the slope of a cohort's wait on its tokens: the host, the step under way and the decodes beside it are the intercept", () => {
  const r = new PrefillRate();
  r.firstChunk(0, 20, 0);
  assert.is(r.idleMs, 20, 'an unpaced first chunk sets the idle time');
  // An engine prefilling 116 tokens a ms whose steps also carry a full batch's decodes:
  // its waves' tokens over their whole wait read 40 tokens a ms (admission bench, `batch
  // 256 varied`), the decodes and the host taken for prefill.
  const sizes = [256, 512, 1_024, 2_048, 512, 1_536, 768, 2_048, 256, 1_024];
  const noise = [9, 0, 14, 3, 11, 6, 1, 13, 4, 8];
  cohorts(r, sizes, 1_000 / 116, (i) => 25 + noise[i]!);
  const rate = r.tokensPerMs!;
  assert.ok(rate > 90 && rate < 150, `the slope reads the engine's 116 tokens a ms within the steps' noise: ${rate}`);
  const whole = sizes.reduce((s, x) => s + x, 0) / sizes.reduce((s, x, i) => s + 25 + noise[i]! + x / 116, 0);
  assert.ok(whole < 60, `where tokens over the whole wait read ${whole}`);
  r.reset();
  assert.is(r.tokensPerMs, null, 'an engine restarted may be another: learnt again');
  assert.is(r.idleMs, Infinity);
});

test('a cohort is the paced first chunks that came together, its wait from the latest of their sends; a request sent after they began is not of it', () => {
  const r = new PrefillRate();
  // Eight cohorts of 1,000 and 3,000 tokens on an engine of 75 µs a token (~13 a ms).
  let t = 0;
  for (let i = 0; i < 8; i++) {
    t += 1_000;
    const tokens = i % 2 === 0 ? 1_000 : 3_000;
    const at = t + 100 + 20 + tokens * 0.075;
    // Sent over 100 ms: the step began after the last of them.
    r.firstChunk(t, at, tokens / 2);
    r.firstChunk(t + 100, at + 1, tokens / 2);
    // A short request sent after the cohort's chunks began, answered beside them.
    r.firstChunk(at + 0.5, at + 1.5, 5_000);
  }
  r.firstChunk(t + 1_000, t + 1_050, 0);
  const rate = r.tokensPerMs!;
  assert.ok(Math.abs(rate - 1 / 0.075) < 0.01, `13.3 tokens a ms, the stray request and the spread of sends left out: ${rate}`);
});

test('the fit needs cohorts of varied sizes, and keeps its last reading while they are alike', () => {
  const r = new PrefillRate();
  const end = cohorts(r, Array(12).fill(1_600), 17.25, (i) => 8 + (i % 3));
  assert.is(r.tokensPerMs, null, 'twelve cohorts of one size say nothing of the slope');
  const end2 = cohorts(r, [800, 1_600, 3_200, 800, 1_600, 3_200, 800, 1_600], 17.25, (i) => 8 + (i % 3), end);
  const rate = r.tokensPerMs!;
  assert.ok(rate > 50 && rate < 70, `varied, the engine's ~58 tokens a ms: ${rate}`);
  // Varied at another cost: the fit follows.
  const end3 = cohorts(r, [800, 1_600, 3_200, 800, 1_600, 3_200, 800, 1_600], 8, (i) => 8 + (i % 3), end2);
  const faster = r.tokensPerMs!;
  assert.ok(faster > rate, `${faster} > ${rate}`);
  // Alike once the kept cohorts are: their noise is not read as a cost.
  const end4 = cohorts(r, Array(32).fill(1_600), 8, (i) => 8 + (i % 3), end3);
  const held = r.tokensPerMs;
  cohorts(r, Array(8).fill(1_600), 8, (i) => (i % 2 === 0 ? 8 : 80), end4);
  assert.is(r.tokensPerMs, held, 'alike again, the last reading holds');
});

test('the slope is the median of the slopes between cohorts: a few that waited out a long step under way do not pull it, and one-prompt cohorts of near sizes read it again', () => {
  // An engine prefilling 232 tokens a ms, its steps beside the prefill 5–8 ms; one or two
  // long prompts a cohort, and one cohort in five waited 20–40 ms more for a long step.
  const rand = mulberry32(11);
  const us = 1_000 / 232;
  const r = new PrefillRate();
  const sizes = Array.from({ length: 32 }, () => (rand() < 0.5 ? 1 : 2) * (1_250 + 470 * rand()));
  const waits = sizes.map((_, i) => 5 + 3 * rand() + (i % 5 === 4 ? 20 + 20 * rand() : 0));
  let end = cohorts(r, sizes, us, (i) => waits[i]!);
  const rate = r.tokensPerMs!;
  assert.ok(rate > 185 && rate < 290, `the engine's 232 tokens a ms, the long waits left out: ${rate}`);
  // A reading too low (the engine was slower for a while): the time budget then lets one
  // long prompt through at a time, and every cohort is one prompt of 1,250–1,720 tokens.
  end = cohorts(r, [800, 1_600, 3_200, 800, 1_600, 3_200, 800, 1_600, 3_200, 800, 1_600, 3_200, 800, 1_600, 3_200, 800, 1_600, 3_200, 800, 1_600, 3_200, 800, 1_600, 3_200, 800, 1_600, 3_200, 800, 1_600, 3_200, 800, 1_600], 17.25, () => 6, end);
  assert.ok(r.tokensPerMs! < 70, `the slower engine's 58 tokens a ms: ${r.tokensPerMs}`);
  assert.is(r.budget(4_096, 25), 1_449, 'one long prompt at a time within 25 ms');
  const single = Array.from({ length: 32 }, () => 1_250 + 470 * rand());
  cohorts(r, single, us, () => 5 + 3 * rand(), end);
  const again = r.tokensPerMs!;
  assert.ok(again > 150 && again < 350, `read again off one-prompt cohorts whose sizes differ by a tenth and 256 tokens or more: ${again}`);
  assert.is(r.budget(4_096, 25), 4_096, 'and two long prompts go at once again');

  // Cohorts of one to sixteen sixteen-token prompts, whose waits grow with their size for
  // other reasons than their prefill (~0.1 ms a token where it costs 0.004): not fitted.
  const short = new PrefillRate();
  const counts = Array.from({ length: 32 }, () => 1 + Math.floor(16 * rand()));
  cohorts(short, counts.map((k) => 16 * k), 100, () => 8 + 2 * rand());
  assert.is(short.tokensPerMs, null, 'cohorts a few short prompts apart say nothing of the cost');
});

/**
 * Ten cohorts of two prompts each (1,000 and 3,000 tokens in turn) on an engine of 75 µs
 * a token (13.3 a ms), fed to each of `rs`; `second` says how the second prompt of each
 * was sent there: queued, and behind how much prefill.
 */
function pairs(rs: readonly PrefillRate[], second: (r: PrefillRate, tokens: number) => { queued: boolean; backlog: number }): void {
  let t = 0;
  for (let i = 0; i < 10; i++) {
    t += 1_000;
    const tokens = i % 2 === 0 ? 1_000 : 3_000;
    const at = t + 20 + tokens * 0.075;
    for (const r of rs) {
      r.firstChunk(t, at, tokens / 2, false, tokens / 2);
      const { queued, backlog } = second(r, tokens);
      r.firstChunk(t, at + 0.5, tokens / 2, queued, backlog);
    }
  }
  for (const r of rs) r.firstChunk(t + 500, t + 520, 0);
}

test('a cohort one of whose prompts was sent with no free batch slot is not fitted: its wait grew with the queue in the engine', () => {
  const queuedOne = new PrefillRate();
  const clear = new PrefillRate();
  pairs([queuedOne, clear], (r, tokens) => ({ queued: r === queuedOne, backlog: tokens }));
  assert.is(queuedOne.tokensPerMs, null);
  assert.ok(Math.abs(clear.tokensPerMs! - 1 / 0.075) < 0.01);
  assert.is(queuedOne.budget(4_096, 25), 256, 'nor does it grow the slow start');
});

test('nor is a cohort sent behind more than twice its own prefill: it waited for the prefill ahead of it', () => {
  const behind = new PrefillRate();
  const clear = new PrefillRate();
  // The second sent behind the first and, for `behind`, a flood's worth of prefill more.
  pairs([behind, clear], (r, tokens) => ({ queued: false, backlog: r === behind ? 100_000 : tokens }));
  assert.is(behind.tokensPerMs, null);
  assert.ok(Math.abs(clear.tokensPerMs! - 1 / 0.075) < 0.01, 'a backlog of the cohort itself is its own');
});

test("a lease counts as queued where the engine had no free batch slot by the router's count, or, its size unknown, past the most it was seen running", () => {
  const budgetAfter = (capacity: number | null, peakRunning: number): number => {
    const { table, eps } = tableOf(1, () => ({ batchCapacity: capacity, peakRunning }));
    const e = eps[0]!;
    const now = Date.now();
    const leases = [table.lease(e, now, 'collected-lower', 1_000), table.lease(e, now, 'collected-lower', 1_000)];
    // The pair came back fast: 2,000 tokens 5 ms past the idle first chunk.
    const idle = table.lease(e, now, 'plain');
    idle.started(true, performance.now() + 10);
    for (const l of leases) l.started(true, performance.now() + 15);
    const closing = table.lease(e, now, 'plain');
    closing.started(true, performance.now() + 100);
    for (const l of [...leases, idle, closing]) l.release(now);
    return e.prefill.budget(8_192, 25);
  };
  assert.is(budgetAfter(2, 0), 4_000, 'room for both: twice the cohort');
  assert.is(budgetAfter(1, 0), 256, 'the second sent past a batch of 1: not counted');
  assert.is(budgetAfter(null, 2), 4_000, 'size unknown, the engine was seen running 2');
  assert.is(budgetAfter(null, 1), 256);
});

test('until the cost is known, a slow start: 256 tokens, then twice the largest cohort that came back within the time budget', () => {
  const r = new PrefillRate();
  assert.is(r.budget(4_096, 25), 256, 'nothing seen: a small first wave, as a flood meets an engine of unknown speed');
  assert.is(r.budget(4_096, 0), 4_096, 'a time budget of 0: tokens only');
  assert.is(r.budget(100, 25), 100, 'never past the token budget');
  r.firstChunk(0, 10, 0);
  // Slow (13 tokens a ms): 256 tokens came back 19 ms past the idle chunk plus a 20 ms step.
  r.firstChunk(100, 149, 256);
  r.firstChunk(1_000, 1_010, 0);
  assert.is(r.budget(4_096, 25), 256, 'a cohort slower than the idle first chunk by more than 25 ms: no growth');
  // Fast: 256 tokens in 5 ms past idle.
  r.firstChunk(2_000, 2_015, 256);
  r.firstChunk(3_000, 3_010, 0);
  assert.is(r.budget(4_096, 25), 512, 'one within it: twice its size');
  r.firstChunk(4_000, 4_020, 1_500);
  r.firstChunk(5_000, 5_010, 0);
  assert.is(r.budget(4_096, 25), 3_000);
});

test('the pacing budget is the token budget, twice the step budget where less, and what the engine prefills in the time budget', () => {
  const { eps } = tableOf(1);
  const e = eps[0]!;
  const limits = { tokens: 4_096, ms: 25 };
  assert.is(pacingBudget(e, limits), 256, 'nothing measured: the slow start');
  assert.is(pacingBudget(e, { tokens: 4_096, ms: 0 }), 4_096, 'a time budget of 0: tokens only');
  cohorts(e.prefill, [256, 512, 1_024, 256, 512, 1_024, 256, 512], 75, () => 20);
  assert.is(pacingBudget(e, limits), 333, "a slow engine (13.3 tokens a ms): 25 ms of its prefill, far under 4,096 tokens");
  e.stepBudget = 128;
  assert.is(pacingBudget(e, limits), 256, 'twice a smaller step budget still bounds it');
  e.stepBudget = null;
  e.prefill.reset();
  cohorts(e.prefill, [256, 512, 1_024, 256, 512, 1_024, 256, 512], 4, () => 20);
  assert.is(pacingBudget(e, limits), 4_096, 'a fast engine (250 tokens a ms): the token budget binds');
});

test('across the model, a prompt over each replica\'s time budget still goes to each replica prefilling none', () => {
  const { table, eps } = tableOf(2, () => ({ batchCapacity: 16, loadAt: Date.now(), load: { waiting: 0, running: 0, kvUsage: 0.1 } }));
  const a = new Admission('m', table, { ...ADMISSION, prefill_tokens_per_replica: 4_096, prefill_ms_per_replica: 25 }, STALE);
  // Engines of 58 tokens a ms: 25 ms is ~1,450 tokens, under one 1,650-token prompt.
  for (const e of eps) cohorts(e.prefill, [800, 1_600, 3_200, 800, 1_600, 3_200, 800, 1_600], 17.25, () => 8);
  const now = Date.now();
  const top = a.tryAdmit(0, now)!;
  const first = a.tryAdmit(1, now, 1_650)!;
  const second = a.tryAdmit(1, now, 1_650);
  assert.ok(second !== null, 'one each: the sum of the budgets alone let one through for both replicas');
  assert.is(a.tryAdmit(1, now, 1_650), null, 'a third would share a replica\'s step');
  for (const p of [first, second!, top]) p.release(now);
});

// A flood meeting an engine of unknown speed: 256 prompts of 16 tokens are 4,096, the
// whole token budget, and on an engine prefilling ~13 tokens a ms one ~300 ms step that
// every interactive request in flight waited through (admission bench, `host-bound short`).
test('a first wave of short lower-band prompts on an engine of unknown cost is the slow start, across the model as per replica; once the cost is measured, the time budget holds', async () => {
  const { table, eps } = tableOf(1, () => ({ batchCapacity: 256, loadAt: Date.now(), load: { waiting: 0, running: 0, kvUsage: 0.1 } }));
  const e = eps[0]!;
  const a = new Admission('m', table, { ...ADMISSION, prefill_tokens_per_replica: 4_096, prefill_ms_per_replica: 25 }, STALE);
  const now = Date.now();
  const top = a.tryAdmit(0, now)!;

  // Queued, then released together as capacity frees: the release admits them before any
  // is sent, so the budget must hold across the model, not only per replica sent to.
  const queued = Array.from({ length: 60 }, () => new AbortController());
  const released: Permit[] = [];
  const waits = queued.map((ac) => a.wait(1, now, ac.signal, 16).then((p) => p && released.push(p)));
  a.release(now);
  await new Promise(setImmediate);
  assert.is(released.length, 16, 'one release: the slow start (256 tokens), not the 60 queued');

  // The engine's cohorts, sent and answered: ~75 µs a token beside a 20 ms step.
  const sent = released.map((p) => ({ permit: p, lease: table.lease(e, now, 'collected-lower', p.promptTokens) }));
  for (const s of sent) s.permit.dispatched();
  cohorts(e.prefill, [256, 512, 1_024, 256, 512, 1_024, 256, 512], 75, () => 20, performance.now());
  const rate = e.prefill.tokensPerMs!;
  assert.ok(Math.abs(rate - 1 / 0.075) < 0.3, `${rate}`);
  const at = performance.now() + 40;
  for (const s of sent) s.lease.started(true, at);
  for (const s of sent) s.permit.firstToken(now);
  await new Promise(setImmediate);
  const fit = Math.floor(Math.floor(25 * rate) / 16);
  assert.is(released.length, 16 + fit, `the next release: what the engine prefills in 25 ms (${fit} prompts)`);
  for (const ac of queued) ac.abort();
  await Promise.all(waits);

  // Admitted and sent one by one, as requests arriving at an empty queue are.
  for (const p of released) p.release(now);
  for (const s of sent) s.lease.release(now);
  const oneByOne: { permit: Permit; lease: ReturnType<typeof table.lease> }[] = [];
  for (let permit = a.tryAdmit(1, now, 16); permit !== null && oneByOne.length < 300; permit = a.tryAdmit(1, now, 16)) oneByOne.push({ permit, lease: table.lease(e, now, 'collected-lower', 16) });
  assert.is(oneByOne.length, fit, 'the same held per replica');
  assert.match(a.holdReason(1, now, 16) ?? '', new RegExp(`would pass the budget of ${Math.floor(25 * rate)} across the replicas taking traffic`));
  for (const { permit, lease } of oneByOne) {
    lease.release(now);
    permit.release(now);
  }
  top.release(now);
  assert.equal([e.inflight, e.lowerPrefilling], [0, 0]);
});

test.run();
