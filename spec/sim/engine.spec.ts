// The batching model, driven in-process on a ManualClock: every duration is exact, so
// these specs check the scheduler's decisions and the step-time model to the microsecond.

import { suite } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import type { EngineClock } from '../../src/sim/clock.js';
import { ManualClock } from '../../src/sim/clock.js';
import type { FinishReason, Sequence, SimEngineConfig, StepInfo } from '../../src/sim/engine.js';
import { LLAMA_3_1_8B_H100, SimEngine } from '../../src/sim/engine.js';

const test = suite('sim engine (batching model)');
const { beta0, beta1, beta2 } = LLAMA_3_1_8B_H100;

interface Harness {
  engine: SimEngine;
  clock: ManualClock;
  steps: StepInfo[];
  order: string[]; // ids in the order their first token came out
  submit(id: string, promptTokens: number, outputTokens: number, salt?: number, priority?: number): Tracked;
}

interface Tracked {
  seq: Sequence;
  tokenTimes: number[];
  finish: FinishReason | null;
}

function harness(config: SimEngineConfig = {}, clock: EngineClock = new ManualClock(1000)): Harness & { clock: ManualClock } {
  const engine = new SimEngine({ clock, ...config });
  const steps: StepInfo[] = [];
  const order: string[] = [];
  engine.addObserver({ onStep: (s) => steps.push({ ...s }) });
  return {
    engine,
    clock: clock as ManualClock,
    steps,
    order,
    submit(id, promptTokens, outputTokens, salt = 0, priority = undefined) {
      const t: Tracked = { seq: null as unknown as Sequence, tokenTimes: [], finish: null };
      t.seq = engine.submit({
        id,
        priority,
        promptTokenIds: Array.from({ length: promptTokens }, (_, i) => 1000 + salt * 100_000 + i),
        outputTokenIds: Array.from({ length: outputTokens }, (_, i) => 50 + i),
        finishReason: 'length',
        onToken: (_s, i) => {
          if (i === 0) order.push(id);
          t.tokenTimes.push(clock.now());
        },
        onFinish: (_s, r) => {
          t.finish = r;
        },
      });
      return t;
    },
  };
}

const close = (a: number, b: number, what: string): void => assert.ok(Math.abs(a - b) < 1e-6, `${what}: ${a} ≠ ${b}`);

test('one request: prefill step then one decode step per token, timed by the fitted model', () => {
  const h = harness({ speed: 1 });
  const t = h.submit('a', 100, 5);
  h.clock.runUntilIdle();
  const prefillMs = (beta0 + beta1 * 100) / 1000;
  const decodeMs = (beta0 + beta2 * 1) / 1000;
  close(t.tokenTimes[0]! - 1000, prefillMs, 'TTFT');
  for (let i = 1; i < 5; i++) close(t.tokenTimes[i]! - t.tokenTimes[i - 1]!, decodeMs, `ITL ${i}`);
  assert.is(t.finish, 'length');
  assert.equal(
    h.steps.map((s) => [s.prefillTokens, s.decodeTokens]),
    [[100, 0], [0, 1], [0, 1], [0, 1], [0, 1]],
  );
  assert.is(h.clock.pending, 0, 'an idle engine holds no timer');
  assert.not.ok(h.engine.busy);
});

test('speed divides every duration', () => {
  const slow = harness({ speed: 1 });
  const fast = harness({ speed: 20 });
  const a = slow.submit('a', 500, 10);
  const b = fast.submit('a', 500, 10);
  slow.clock.runUntilIdle();
  fast.clock.runUntilIdle();
  close((a.tokenTimes[9]! - 1000) / 20, b.tokenTimes[9]! - 1000, 'e2e / 20');
});

test('never more than max_num_seqs run; the rest queue FCFS and their TTFT grows', () => {
  const h = harness({ maxNumSeqs: 4, speed: 1 });
  let maxRunning = 0;
  h.engine.addObserver({ onStep: () => (maxRunning = Math.max(maxRunning, h.engine.numRunning)) });
  const all = Array.from({ length: 12 }, (_, i) => h.submit(`r${i}`, 20, 30, i));
  assert.is(h.engine.numWaiting, 12);
  h.clock.runUntilIdle();
  assert.is(maxRunning, 4);
  assert.ok(h.steps.every((s) => s.numSeqs <= 4));
  assert.equal(h.order, all.map((_, i) => `r${i}`), 'first tokens in arrival order');
  const ttft = all.map((t) => t.tokenTimes[0]! - 1000);
  const wave = (w: number): number => Math.max(...ttft.slice(w * 4, w * 4 + 4));
  assert.ok(wave(1) > wave(0) * 10 && wave(2) > wave(1) * 1.5, `waves: ${wave(0)}, ${wave(1)}, ${wave(2)} ms`);
  assert.ok(all.every((t) => t.finish === 'length' && t.tokenTimes.length === 30));
});

test('a prompt longer than the token budget is prefilled in chunks, with decodes riding along', () => {
  const h = harness({ maxNumBatchedTokens: 1000, speed: 1 });
  const short = h.submit('short', 10, 50);
  h.clock.advance(0); // let it start
  const long = h.submit('long', 2500, 2);
  h.clock.runUntilIdle();
  const chunks = h.steps.filter((s) => s.prefillTokens > 0).map((s) => [s.prefillTokens, s.decodeTokens]);
  assert.equal(chunks, [[10, 0], [999, 1], [999, 1], [502, 1]], 'budget 1000 = 1 decode + 999 prefill');
  assert.is(long.tokenTimes.length, 2);
  assert.is(long.tokenTimes[0], short.tokenTimes[3], 'the long prompt\'s first token comes with its last chunk, the 4th step');
});

test('a repeated prompt hits the prefix cache: cached tokens, a shorter prefill, counters', () => {
  const h = harness({ speed: 1 });
  const first = h.submit('first', 2000, 4, 1);
  h.clock.runUntilIdle();
  const start = h.clock.now();
  const again = h.submit('again', 2000, 4, 1);
  h.clock.runUntilIdle();
  const fresh = h.submit('fresh', 2000, 4, 2);
  h.clock.runUntilIdle();
  assert.is(first.seq.numCachedTokens, 0);
  assert.is(again.seq.numCachedTokens, 1984, 'all full blocks but the last token: 2000 → 124 blocks = 1984');
  assert.is(fresh.seq.numCachedTokens, 0);
  const ttftAgain = again.tokenTimes[0]! - start;
  close(ttftAgain, (beta0 + beta1 * 16) / 1000, 'TTFT of the repeat = a 16-token prefill');
  assert.ok(fresh.tokenTimes[0]! - fresh.seq.arrivalMs > 5 * ttftAgain);
  assert.is(h.engine.counters.prefixHitTokens, 1984);
  assert.is(h.engine.counters.prefixQueriedTokens, 6000);
});

test('a prompt of whole blocks still computes its last block (at least one token is computed)', () => {
  const h = harness();
  h.submit('a', 64, 1, 3);
  h.clock.runUntilIdle();
  const b = h.submit('b', 64, 1, 3);
  h.clock.runUntilIdle();
  assert.is(b.seq.numCachedTokens, 48);
  assert.is(h.steps.at(-1)!.prefillTokens, 16);
});

test('running sequences share prefix blocks instead of copying them', () => {
  const h = harness({ numGpuBlocks: 1000 });
  h.submit('a', 320, 100, 4);
  h.clock.advance(0.1);
  const used = h.engine.kv.numUsedBlocks;
  h.submit('b', 320, 100, 4);
  h.clock.advance(30);
  assert.is(h.engine.numRunning, 2);
  assert.is(used, 20);
  assert.ok(h.engine.kv.numUsedBlocks <= used + 3, `${h.engine.kv.numUsedBlocks} blocks for two sequences sharing 19 blocks`);
  h.clock.runUntilIdle();
});

test('when the KV cache runs out the newest running sequence is preempted and recomputed', () => {
  // 24 blocks = 384 tokens; four sequences that each grow to 40 + 100 tokens (9 blocks) cannot all fit.
  const h = harness({ numGpuBlocks: 24, maxModelLen: 384, speed: 1 });
  const victims: string[] = [];
  h.engine.addObserver({ onPreempted: (s) => victims.push(s.id) });
  const all = ['a', 'b', 'c', 'd'].map((id, i) => h.submit(id, 40, 100, 10 + i));
  let peak = 0;
  h.engine.addObserver({ onStep: () => (peak = Math.max(peak, h.engine.kvUsage)) });
  h.clock.runUntilIdle();
  assert.ok(h.engine.counters.preemptions > 0, 'some sequence was preempted');
  assert.is(victims[0], 'd', 'the most recently admitted goes first');
  assert.ok(all.every((t) => t.finish === 'length' && t.tokenTimes.length === 100), 'every sequence still completes in full');
  assert.ok(all.every((t) => t.tokenTimes.every((x, i) => i === 0 || x > t.tokenTimes[i - 1]!)), 'tokens strictly in order');
  assert.is(peak, 1, 'the cache was full');
  assert.is(h.engine.kv.numUsedBlocks, 0, 'no block leaked');
});

test('priority policy: the queue is served lower priority first, then by arrival; a full batch is not preempted for it', () => {
  const h = harness({ maxNumSeqs: 2, speed: 1, schedulingPolicy: 'priority' });
  h.submit('b1', 20, 50, 1, 5);
  h.submit('b2', 20, 50, 2, 5);
  h.clock.advance(1); // both running
  const waiting = [h.submit('b3', 20, 5, 3, 5), h.submit('b4', 20, 5, 4, 5), h.submit('p1', 20, 5, 5, 0), h.submit('p2', 20, 5, 6, 0)];
  assert.is(h.engine.numRunning, 2);
  h.clock.runUntilIdle();
  assert.equal(h.order, ['b1', 'b2', 'p1', 'p2', 'b3', 'b4'], 'the urgent ones first once slots free; FCFS among equals');
  const p1 = waiting[2]!.tokenTimes[0]!;
  assert.ok(p1 > h.steps[0]!.startMs + 50 * (beta0 / 1000), 'p1 waited for the running batch to finish: no preemption at max_num_seqs');
  const fcfs = harness({ maxNumSeqs: 2, speed: 1 });
  assert.throws(() => fcfs.submit('x', 20, 5, 1, 3), /Priority scheduling is not enabled/, 'fcfs refuses a priority, as vLLM does');
  fcfs.submit('y', 20, 5, 1, 0);
  fcfs.clock.runUntilIdle();
});

test('priority policy: a KV shortage preempts the least urgent running sequence, not the newest', () => {
  // As the FCFS preemption spec, but the newest ('d') is the most urgent: 'c', the least, goes.
  const h = harness({ numGpuBlocks: 24, maxModelLen: 384, speed: 1, schedulingPolicy: 'priority' });
  const victims: string[] = [];
  h.engine.addObserver({ onPreempted: (s) => victims.push(s.id) });
  const all = [h.submit('a', 40, 100, 10, 1), h.submit('b', 40, 100, 11, 1), h.submit('c', 40, 100, 12, 2), h.submit('d', 40, 100, 13, 0)];
  h.clock.runUntilIdle();
  assert.ok(victims.length > 0, 'some sequence was preempted');
  assert.is(victims[0], 'c');
  assert.not.ok(victims.includes('d'), 'the most urgent is never the victim while a less urgent one runs');
  assert.ok(all.every((t) => t.finish === 'length' && t.tokenTimes.length === 100), 'every sequence still completes in full');
  assert.is(h.engine.kv.numUsedBlocks, 0, 'no block leaked');
});

test('abort frees blocks at once, in the queue or mid-step, and the rest carry on', () => {
  const h = harness({ maxNumSeqs: 2, speed: 1 });
  const a = h.submit('a', 500, 1000, 20);
  const b = h.submit('b', 500, 1000, 21);
  const c = h.submit('c', 500, 10, 22);
  h.clock.advance(50);
  assert.is(h.engine.numRunning, 2);
  assert.is(h.engine.numWaiting, 1);
  const before = h.engine.kv.numUsedBlocks;
  const emitted = a.tokenTimes.length;
  assert.ok(h.engine.abort('a'));
  assert.is(a.finish, 'abort');
  assert.ok(h.engine.kv.numUsedBlocks <= before - 32, 'a\'s blocks are free');
  assert.not.ok(h.engine.abort('a'), 'a second abort is a no-op');
  h.clock.advance(50);
  assert.is(a.tokenTimes.length, emitted, 'no token after abort, not even from the step in flight');
  h.engine.abort(b.seq);
  h.clock.runUntilIdle();
  assert.is(c.finish, 'length');
  assert.equal(h.engine.counters.finished, { stop: 0, length: 1, abort: 2 });
  assert.is(h.engine.kvUsage, 0);
  assert.ok(h.engine.kv.numCachedBlocks > 0, 'freed blocks stay cached though they count as free');
});

test('the reported counts (what the gauges show) are refreshed once per step, as vLLM\'s scheduler stats are', () => {
  const h = harness({ maxNumSeqs: 1 });
  h.submit('a', 32, 3);
  h.submit('b', 32, 3, 1);
  assert.equal(h.engine.reported, { running: 0, waiting: 0, kvUsage: 0 }, 'not counted before a step ends');
  assert.is(h.engine.numRunning + h.engine.numWaiting, 2);
  h.clock.advance(0); // the first step starts
  h.clock.advance(h.steps[0]!.endMs - h.clock.now());
  assert.is(h.engine.reported.running, 1);
  assert.is(h.engine.reported.waiting, 1);
  assert.ok(h.engine.reported.kvUsage > 0);
  h.clock.runUntilIdle();
  assert.equal(h.engine.reported, { running: 0, waiting: 0, kvUsage: 0 }, 'the last step reports the engine empty');
});

test('a request that arrives while a step runs is not reported waiting until a scheduling pass leaves it so, as in vLLM', () => {
  // vLLM's engine core reads new requests off its input queue between steps: its stats
  // after a step count only what that step's pass could not admit.
  const h = harness({ maxNumSeqs: 1 });
  h.submit('a', 32, 3);
  h.clock.advance(0); // the first step starts with 'a'
  h.clock.advance(1);
  h.submit('b', 32, 3, 1); // arrives while it runs
  h.clock.advance(h.steps[0]!.endMs - h.clock.now());
  assert.equal({ ...h.engine.reported, kvUsage: 0 }, { running: 1, waiting: 0, kvUsage: 0 }, 'no pass has seen b yet');
  h.clock.advance(h.steps[1]!.endMs - h.clock.now());
  assert.equal({ ...h.engine.reported, kvUsage: 0 }, { running: 1, waiting: 1, kvUsage: 0 }, 'the second pass left b waiting: the one slot is taken');
  h.clock.runUntilIdle();
});

test('live gauges count a request the moment it arrives, and a finished one the moment it leaves', () => {
  const h = harness({ maxNumSeqs: 1, gauges: 'live' });
  h.submit('a', 32, 3);
  h.submit('b', 32, 3, 1);
  assert.equal({ ...h.engine.reported, kvUsage: 0 }, { running: 0, waiting: 2, kvUsage: 0 }, 'both queued before any step ran');
  h.clock.advance(0); // the first step starts: 'a' runs
  assert.is(h.engine.reported.running, 1);
  assert.is(h.engine.reported.waiting, 1);
  assert.ok(h.engine.reported.kvUsage > 0, 'its prefill holds blocks from the step that started it');
  h.clock.runUntilIdle();
  assert.equal(h.engine.reported, { running: 0, waiting: 0, kvUsage: 0 });
});

test('lagged gauges change only on a grid of gaugeLagMs from the engine\'s start, and an idle engine arms no timer', () => {
  const h = harness({ gaugeLagMs: 100, gauges: 'live' });
  assert.is(h.clock.pending, 0, 'nothing to publish yet');
  h.clock.advance(30);
  h.submit('a', 32, 300);
  h.clock.advance(69); // t = 99 from the start: the grid point at 100 not reached
  assert.equal(h.engine.reported, { running: 0, waiting: 0, kvUsage: 0 }, 'the request is not shown before the grid point');
  assert.is(h.engine.numRunning, 1, 'though it runs');
  h.clock.advance(1);
  assert.is(h.engine.reported.running, 1, 'published at the grid point');
  h.clock.runUntilIdle();
  assert.ok(h.clock.now() - 1000 >= 200 && (h.clock.now() - 1000) % 100 === 0, `the last change is published on the grid too (t = ${h.clock.now() - 1000})`);
  assert.equal(h.engine.reported, { running: 0, waiting: 0, kvUsage: 0 }, 'and the empty engine is shown in the end');
  assert.is(h.clock.pending, 0);
});

test('lagged step gauges publish the last step\'s stats, not the live queues', () => {
  const h = harness({ gaugeLagMs: 5 });
  h.submit('a', 32, 300);
  h.clock.advance(5); // a grid point inside the first step (≈ 6.3 ms): no step has ended
  assert.is(h.engine.numRunning, 1);
  assert.equal(h.engine.reported, { running: 0, waiting: 0, kvUsage: 0 }, 'published, but what the last step reported: nothing');
  h.clock.advance(5);
  assert.ok(h.steps[0]!.endMs < h.clock.now());
  assert.is(h.engine.reported.running, 1, 'the next grid point shows the step that ended');
  h.engine.close();
});

test('with no token budget (0) every admitted prompt is prefilled in one step, as without chunked prefill', () => {
  const h = harness({ maxNumBatchedTokens: 0 });
  assert.is(h.engine.maxNumBatchedTokens, Infinity);
  const all = [0, 1, 2, 3].map((i) => h.submit(`p${i}`, 3000, 2, i));
  h.clock.runUntilIdle();
  assert.equal(h.steps[0]!.prefillTokens, 12_000, 'all four prompts in the first step');
  close(h.steps[0]!.endMs - h.steps[0]!.startMs, (beta0 + beta1 * 12_000) / 1000, 'one long step');
  assert.ok(all.every((t) => t.tokenTimes[0] === all[0]!.tokenTimes[0]), 'every first token at the end of that step');
  const chunked = harness();
  [0, 1, 2, 3].map((i) => chunked.submit(`p${i}`, 3000, 2, i));
  chunked.clock.runUntilIdle();
  assert.is(chunked.steps[0]!.prefillTokens, 8192, 'the default budget chunks the same prompts');
});

test('close aborts everything and stops the loop', () => {
  const h = harness();
  const a = h.submit('a', 100, 100);
  h.clock.advance(5);
  h.engine.close();
  assert.is(a.finish, 'abort');
  assert.is(h.clock.pending, 0);
  assert.throws(() => h.submit('b', 1, 1), /closed/);
});

test('a clock that wakes late does not throttle the engine, nor release tokens early', () => {
  // Every timer fires on the next whole 5 ms tick, like a coarse OS timer.
  class LateClock extends ManualClock {
    override schedule(fn: () => void, delayMs: number): () => void {
      const at = this.now() + Math.max(0, delayMs);
      return super.schedule(fn, Math.ceil(at / 5) * 5 - this.now());
    }
  }
  const clock = new LateClock(1000);
  const h = harness({ speed: 100, maxLagMs: 50 }, clock);
  const t = h.submit('a', 50, 200);
  h.clock.runUntilIdle();
  const simulated = (beta0 + beta1 * 50 + 199 * (beta0 + beta2)) / 1000 / 100; // ≈ 11.6 ms
  const elapsed = t.tokenTimes.at(-1)! - 1000;
  assert.ok(elapsed < simulated + 10, `took ${elapsed} ms for ${simulated} ms of steps (one step per wake-up would take ~1000 ms)`);
  assert.ok(elapsed >= simulated, 'and never less than the steps themselves');
});

test('refuses a configuration where one maximal sequence cannot fit the cache, as vLLM does', () => {
  assert.throws(() => new SimEngine({ numGpuBlocks: 10, maxModelLen: 1000 }), /larger than the KV cache holds/);
  assert.is(new SimEngine({ numGpuBlocks: 10 }).maxModelLen, 160, 'without maxModelLen it is what the cache holds');
  assert.throws(() => new SimEngine({ speed: 0 }), /speed/);
  assert.throws(() => new SimEngine({ maxNumSeqs: 0 }), /maxNumSeqs/);
  assert.throws(() => new SimEngine({ maxNumBatchedTokens: -1 }), /maxNumBatchedTokens must be a whole number ≥ 0/);
  assert.throws(() => new SimEngine({ gaugeLagMs: 1.5 }), /gaugeLagMs/);
  assert.throws(() => new SimEngine({ gauges: 'lagged' as 'live' }), /gauges must be step or live/);
});

test.run();
