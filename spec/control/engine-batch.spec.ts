// The batch limits the control plane passes a vLLM engine it launches, so the router
// knows them instead of learning them from the engine's queue.
import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { pinnedBatchArgs, vllmBatchDefaults } from '../../src/control/engine-batch.js';
import { Fleet, model, prof, report } from './fleet-sim.js';

const H100 = { name: 'NVIDIA H100 80GB HBM3', memoryTotalMiB: 81_559 };
const H200 = { name: 'NVIDIA H200', memoryTotalMiB: 143_771 };
const A100_80 = { name: 'NVIDIA A100-SXM4-80GB', memoryTotalMiB: 81_920 };
const L40S = { name: 'NVIDIA L40S', memoryTotalMiB: 46_068 };

test("vLLM's own defaults by card: 1024 and 8192 from 70 GiB up except on an A100, else 256 and 2048", () => {
  assert.equal(vllmBatchDefaults(H100), { maxNumSeqs: 1024, maxNumBatchedTokens: 8192 });
  assert.equal(vllmBatchDefaults(H200), { maxNumSeqs: 1024, maxNumBatchedTokens: 8192 });
  assert.equal(vllmBatchDefaults(A100_80), { maxNumSeqs: 256, maxNumBatchedTokens: 2048 }, 'an A100 of 80 GB keeps the smaller ones');
  assert.equal(vllmBatchDefaults(L40S), { maxNumSeqs: 256, maxNumBatchedTokens: 2048 });
  assert.equal(vllmBatchDefaults({ name: 'x', memoryTotalMiB: 70 * 1024 }), { maxNumSeqs: 1024, maxNumBatchedTokens: 8192 }, '70 GiB exactly is large');
  assert.is(vllmBatchDefaults({ name: 'NVIDIA H100 80GB HBM3', memoryTotalMiB: null }), null, 'memory not reported: unknown');
});

test('each flag the profile leaves unset is added at that default; one it sets, in either spelling, is its own', () => {
  assert.equal(pinnedBatchArgs('vllm', [], [H100]), ['--max-num-seqs', '1024', '--max-num-batched-tokens', '8192']);
  assert.equal(pinnedBatchArgs('vllm', ['--max-num-seqs', '64'], [H100]), ['--max-num-batched-tokens', '8192']);
  assert.equal(pinnedBatchArgs('vllm', ['--max-num-batched-tokens=4096'], [L40S]), ['--max-num-seqs', '256']);
  assert.equal(pinnedBatchArgs('vllm', ['--max-num-seqs=8', '--max-num-batched-tokens', '512'], [H100]), []);
  assert.equal(pinnedBatchArgs('vllm', ['--no-enable-chunked-prefill'], [H100]), ['--max-num-seqs', '1024'], 'chunked prefill off: its budget is the context length, vLLM sets it');
});

test('the smallest card of the group decides; nothing where a card is unknown, nor for SGLang, which publishes its own', () => {
  assert.equal(pinnedBatchArgs('vllm', [], [H100, L40S]), ['--max-num-seqs', '256', '--max-num-batched-tokens', '2048']);
  assert.equal(pinnedBatchArgs('vllm', [], [H100, { name: null, memoryTotalMiB: null }]), []);
  assert.equal(pinnedBatchArgs('vllm', [], []), []);
  assert.equal(pinnedBatchArgs('sglang', [], [H100]), []);
});

test('a replica placed on reported cards is launched with the limits, and its endpoint tells the router its batch and step budget', () => {
  const f = new Fleet([model('m', 1, [prof()])], { settleMs: 0 });
  const withCards = (id: string) => {
    const r = report(id, 2);
    return { ...r, gpus: r.gpus.map((g) => ({ ...g, ...H100 })) };
  };
  f.running.set('n1', new Map());
  f.rec.register(withCards('n1'), [], f.now);
  f.flush();
  f.advance(2_000);
  const [r] = f.replicas('ready');
  assert.ok(r, 'placed and ready');
  assert.equal(r.shards[0]!.spec.extraArgs, ['--max-num-seqs', '1024', '--max-num-batched-tokens', '8192'], 'passed to the engine');
  assert.is(r.endpoint.batchSize, 1024, 'the router counts slots from it at once');
  assert.is(r.endpoint.stepBudget, 8192, 'and paces prefill by it');
  // A node whose agent does not report memory: nothing is guessed.
  const g = new Fleet([model('m', 1)], { settleMs: 0 });
  g.join('n1');
  g.advance(2_000);
  assert.is(g.replicas('ready')[0]!.shards[0]!.spec.extraArgs, undefined);
  assert.is(g.replicas('ready')[0]!.endpoint.batchSize, null, 'left to learning, as before');
});

test.run();
