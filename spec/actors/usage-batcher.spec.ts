import * as assert from 'uvu/assert';
import { accounting } from '../../src/actors/accounting/accounting.js';
import { UsageBatcher } from '../../src/actors/accounting/usage-batcher.js';
import type { UsageRecord } from '../../src/messages/accounting.js';
import { ActorSystem } from '../../src/runtime/index.js';
import { suite } from '../support/uvu.js';

const test = suite('usage records reach the accounting actor in one message per event-loop turn');

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

test('records added in one turn travel together; none is lost, flush sends what is pending at once', async () => {
  const system = await ActorSystem.start({ threads: [{ name: 'telemetry' }] });
  try {
    const ref = await system.spawn(accounting, { name: 'accounting', thread: 'telemetry', args: { recent: 100, models: { m: 'm' } } });
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
  } finally {
    await system.shutdown();
  }
});

test.run();
