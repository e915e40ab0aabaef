// What the router learns of a placed replica from its profile's engine args: the batch
// size and the per-step token budget admission paces by, and the GPUs it is priced on.
import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { batchSizeOf, enginePriorityOf, stepBudgetOf } from '../../src/control/replica.js';

test('the batch size from --max-num-seqs, either spelling; absent or nonsense is unknown', () => {
  assert.is(batchSizeOf('vllm', ['--max-num-seqs', '64']), 64);
  assert.is(batchSizeOf('vllm', ['--dtype', 'auto', '--max-num-seqs=128']), 128);
  assert.is(batchSizeOf('vllm', []), null);
  assert.is(batchSizeOf('vllm', ['--max-num-seqs', '0']), null);
  assert.is(batchSizeOf('vllm', ['--max-num-seqs', 'lots']), null);
  assert.is(batchSizeOf('vllm', ['--max-num-seqs']), null);
});

test('SGLang\'s batch size is --max-running-requests; vLLM\'s flag means nothing to it, nor SGLang\'s to vLLM', () => {
  assert.is(batchSizeOf('sglang', ['--max-running-requests', '48']), 48);
  assert.is(batchSizeOf('sglang', ['--max-running-requests=32']), 32);
  assert.is(batchSizeOf('sglang', ['--max-num-seqs', '64']), null);
  assert.is(batchSizeOf('vllm', ['--max-running-requests', '48']), null);
});

test('the step budget from --max-num-batched-tokens, either spelling; absent is unknown', () => {
  assert.is(stepBudgetOf('vllm', ['--max-num-batched-tokens', '2048']), 2048);
  assert.is(stepBudgetOf('vllm', ['--max-num-seqs', '8', '--max-num-batched-tokens=8192']), 8192);
  assert.is(stepBudgetOf('vllm', ['--max-num-seqs', '8']), null);
  assert.is(stepBudgetOf('vllm', ['--max-num-batched-tokens', '-1']), null);
});

test('SGLang\'s step budget is --chunked-prefill-size; -1 turns chunking off, which is no budget (0)', () => {
  assert.is(stepBudgetOf('sglang', ['--chunked-prefill-size', '4096']), 4096);
  assert.is(stepBudgetOf('sglang', ['--chunked-prefill-size=-1']), 0);
  assert.is(stepBudgetOf('sglang', []), null);
  assert.is(stepBudgetOf('sglang', ['--max-num-batched-tokens', '2048']), null);
});

test('the engine\'s priority order from its scheduling flags: vLLM lower first, SGLang higher first unless told otherwise', () => {
  assert.is(enginePriorityOf('vllm', ['--scheduling-policy', 'priority']), 'lower-first');
  assert.is(enginePriorityOf('vllm', ['--max-num-seqs', '8', '--scheduling-policy=priority']), 'lower-first');
  assert.is(enginePriorityOf('vllm', ['--scheduling-policy', 'fcfs']), null);
  assert.is(enginePriorityOf('vllm', ['--scheduling-policy', 'priority', '--scheduling-policy=fcfs']), null, 'the last one wins, as vLLM reads its flags');
  assert.is(enginePriorityOf('vllm', []), null);
  assert.is(enginePriorityOf('vllm', ['--enable-priority-scheduling']), null, 'an SGLang flag means nothing to vLLM');
  assert.is(enginePriorityOf('sglang', ['--enable-priority-scheduling']), 'higher-first');
  assert.is(enginePriorityOf('sglang', ['--enable-priority-scheduling', '--schedule-low-priority-values-first']), 'lower-first');
  assert.is(enginePriorityOf('sglang', ['--schedule-low-priority-values-first']), null);
});

test.run();
