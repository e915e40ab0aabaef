import * as assert from 'uvu/assert';
import { buildLaunch } from '../../src/agent/engines/index.js';
import type { LlmgwError } from '../../src/errors.js';
import { parseVllmServeArgs } from '../../src/sim/vllm-argv.js';
import { engineSpec } from '../agent/supervisor/helpers.js';
import { test } from '../support/uvu.js';

// The sim's `vllm serve` reads exactly what the agent's vLLM adapter writes.

test("the adapter's own argv, operator extras and all, is understood", () => {
  const launch = buildLaunch(engineSpec(8123, { tp: 2, httpHost: '10.0.0.5', gpus: [{ index: 0, class: 'h100-80g', computeCapability: '9.0' }, { index: 1, class: 'h100-80g', computeCapability: '9.0' }], extraArgs: ['--max-num-seqs', '8', '--enable-prefix-caching', '--max-model-len=4096', '--gpu-memory-utilization', '0.9', '--scheduling-policy', 'priority'] }), { vllm: 'vllm' });
  const argv = launch.commands.at(-1)!.argv;
  assert.is(argv[0], 'vllm');
  assert.equal(parseVllmServeArgs(argv.slice(1)), {
    model: '/models/llama-3.1-8b',
    servedName: 'llama-3.1-8b',
    host: '10.0.0.5',
    port: 8123,
    tp: 2,
    headless: false,
    seed: 0,
    maxNumSeqs: 8,
    maxModelLen: 4096,
    maxNumBatchedTokens: undefined,
    numGpuBlocks: undefined,
    schedulingPolicy: 'priority',
    nnodes: 1,
    nodeRank: 0,
    master: null,
  });
});

test('vLLM defaults: the model is the served name, all interfaces, port 8000; underscores count as dashes', () => {
  const a = parseVllmServeArgs(['serve', 'org/model', '--tensor_parallel_size', '4', '--headless', '--seed=7']);
  assert.equal([a.servedName, a.host, a.port, a.tp, a.headless, a.seed], ['org/model', '0.0.0.0', 8000, 4, true, 7]);
  const leader = parseVllmServeArgs(['serve', 'm', '--nnodes', '2', '--node-rank', '0', '--master-addr', '10.0.0.1', '--master-port', '29600']);
  assert.equal([leader.nnodes, leader.nodeRank, leader.master], [2, 0, { host: '10.0.0.1', port: 29600 }]);
});

test('what cannot be served is refused with the reason', () => {
  const why = (argv: string[]): string => {
    try {
      parseVllmServeArgs(argv);
    } catch (err) {
      assert.is((err as LlmgwError).code, 'LLMGW_INVALID_REQUEST');
      return (err as Error).message;
    }
    return assert.unreachable('accepted') as never;
  };
  assert.is(why(['bench', 'm']), "vllm (sim): expected 'serve MODEL [flags]', got 'bench m'");
  assert.is(why(['serve', '--port', '1']), 'vllm (sim): no model: expected serve MODEL');
  assert.is(why(['serve', 'm', '--port', 'eighty']), "vllm (sim): --port must be a whole number ≥ 0, not 'eighty'");
  assert.is(why(['serve', 'm', '--max-num-seqs', '0']), "vllm (sim): --max-num-seqs must be a whole number ≥ 1, not '0'");
  assert.is(why(['serve', 'm', '--port', '70000']), 'vllm (sim): --port must be at most 65535, not 70000');
});

test.run();
