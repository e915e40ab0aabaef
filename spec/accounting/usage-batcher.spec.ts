import * as assert from 'uvu/assert';
import { accounting } from '../../src/actors/accounting/accounting.js';
import { UsageBatcher } from '../../src/accounting/usage-batcher.js';
import { ACCOUNTING, type AccountingMsg, type UsageRecord } from '../../src/messages/accounting.js';
import { ActorSystem, type ActorRef } from '../../src/runtime/index.js';
import { until } from '../support/until.js';
import { suite } from '../support/uvu.js';

const test = suite('usage records reach the accounting actor in batches: per event-loop turn, at most one per interval');

const record = (id: string): UsageRecord => ({
  id,
  at: Date.now(),
  path: '/v1/completions',
  modelAsked: 'm',
  modelServed: 'm',
  fallback: false,
  endpoint: 'e',
  status: 200,
  error: null,
  stream: false,
  promptTokens: 3,
  completionTokens: 5,
  cachedTokens: 0,
  usageEstimated: false,
  ttftMs: 1,
  durationMs: 2,
  queueMs: 0,
  band: null,
  attempts: 1,
  scheduleMicros: 1,
  profile: 'chat',
});

/** Runs `body` against an accounting actor on its own telemetry thread. */
async function withAccounting(body: (ref: ActorRef<AccountingMsg>, system: ActorSystem) => Promise<void>): Promise<void> {
  const system = await ActorSystem.start({ threads: [{ name: 'telemetry' }] });
  try {
    await body(await system.spawn(accounting, { address: ACCOUNTING, thread: 'telemetry', args: { recent: 100, models: { m: 'm' } } }), system);
  } finally {
    await system.shutdown();
  }
}

test('records added in one turn travel together; none is lost, flush sends what is pending at once', () =>
  withAccounting(async (ref, system) => {
    const batcher = new UsageBatcher(ref);
    const processed = async (): Promise<number> => (await system.stats()).find((s) => s.name === 'accounting')!.processed;
    const before = await processed();
    for (let i = 0; i < 5; i++) batcher.add(record(`a${i}`));
    await new Promise(setImmediate);
    batcher.add(record('b0'));
    batcher.add(record('b1'));
    batcher.flush(); // as shutdown does: no waiting for the turn to end
    const totals = await ref.ask({ type: 'totals' });
    assert.is(totals.requests, 7);
    assert.is(totals.completionTokens, 35);
    assert.equal((await ref.ask({ type: 'recent', limit: 10 })).map((r) => r.id), ['a0', 'a1', 'a2', 'a3', 'a4', 'b0', 'b1']);
    // Two batches and the two asks: a message per record would have been seven.
    assert.is((await processed()) - before, 4);
    await new Promise(setImmediate);
    assert.is((await ref.ask({ type: 'totals' })).requests, 7, 'the flushed batch is not sent again');
  }));

test('records that end one per turn, within the interval of the last batch, travel together in the next', () =>
  withAccounting(async (ref, system) => {
    const batcher = new UsageBatcher(ref, { intervalMs: 60_000 });
    batcher.add(record('first'));
    await until(async () => (await ref.ask({ type: 'totals' })).requests === 1, 'the first record goes at once');
    for (let i = 0; i < 3; i++) {
      batcher.add(record(`later${i}`));
      await new Promise(setImmediate);
    }
    assert.is(batcher.waiting, 3, 'held: the interval since the last batch is not up');
    batcher.flush();
    assert.is(batcher.waiting, 0, 'all three went in one batch');
    await until(async () => (await ref.ask({ type: 'totals' })).requests === 4, 'the held records arrive');
    assert.equal((await ref.ask({ type: 'recent', limit: 10 })).map((r) => r.id), ['first', 'later0', 'later1', 'later2']);
  }));

test('a batch held for the interval goes when it is up, without a flush', () =>
  withAccounting(async (ref, system) => {
    const batcher = new UsageBatcher(ref, { intervalMs: 50 });
    batcher.add(record('a'));
    await until(async () => (await ref.ask({ type: 'totals' })).requests === 1, 'the first record');
    batcher.add(record('b'));
    batcher.add(record('c'));
    await until(async () => (await ref.ask({ type: 'totals' })).requests === 3, 'the held records, once the interval is up');
  }));

test('records the accounting actor refuses are kept and sent again; past the bound the oldest are lost, counted', async () => {
  const system = await ActorSystem.start({ threads: [{ name: 'telemetry' }] });
  try {
    // No accounting actor yet, as while its thread is being restarted: every batch is refused.
    const batcher = new UsageBatcher(system.ref(ACCOUNTING), { maxPending: 3, retryMs: 1 });
    const refusals = async (): Promise<number> => {
      const text = await (await system.metrics()).metrics();
      return Number(/llmgw_actor_dead_letters_total\{thread="main",actor="accounting",reason="LLMGW_ACTOR_NOT_FOUND"\} (\d+)/.exec(text)?.[1] ?? 0);
    };
    for (let i = 0; i < 2; i++) batcher.add(record(`r${i}`));
    await until(async () => (await refusals()) >= 2, 'two refused batches');
    assert.is(batcher.waiting, 2, 'the refused records are still held');
    for (let i = 2; i < 5; i++) batcher.add(record(`r${i}`));
    assert.is(batcher.lost, 2);
    assert.is(batcher.waiting, 3);
    const ref = await system.spawn(accounting, { address: ACCOUNTING, thread: 'telemetry', args: { recent: 100, models: { m: 'm' } } });
    await until(async () => (await ref.ask({ type: 'totals' })).requests === 3, 'the held records arrive');
    assert.equal((await ref.ask({ type: 'recent', limit: 10 })).map((r) => r.id), ['r2', 'r3', 'r4'], 'the newest were kept, in order');
    assert.is(batcher.waiting, 0);
  } finally {
    await system.shutdown();
  }
});

test.run();
