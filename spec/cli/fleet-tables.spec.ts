// How `llmgw ctl` shows the control plane's views: the renderers on fixed views and a
// fixed clock, exactly as a person reads them.
import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { ago, renderExplanation, renderLogs, renderModels, renderNodes, renderNodeState, renderReload, renderReplicas } from '../../src/cli/fleet-tables.js';
import { EXPLANATION, logsOf, MODELS, NODES, NOW, REPLICAS } from '../admin/fixtures/fleet-views.js';

test('a heartbeat reads in its largest whole unit, never in the future, and never when there was none', () => {
  assert.is(ago(NOW - 3_400, NOW), '3s ago');
  assert.is(ago(NOW - 59_999, NOW), '59s ago');
  assert.is(ago(NOW - 60_000, NOW), '1m ago');
  assert.is(ago(NOW - 3 * 3_600_000 - 1, NOW), '3h ago');
  assert.is(ago(NOW - 2 * 86_400_000, NOW), '2d ago');
  assert.is(ago(NOW + 5_000, NOW), '0s ago', 'a clock a little ahead is not a heartbeat from the future');
  assert.is(ago(null, NOW), 'never');
});

test('nodes: one line per node with state, agent, heartbeat, GPUs by class, free GPUs, fabrics; then every GPU and its problems', () => {
  assert.is(
    renderNodes(NODES, NOW),
    `NAME   STATE     AGENT            HEARTBEAT  GPUS         FREE  FABRICS                 REPLICAS
gpu-a  ready     connected 0.4.0  3s ago     4xH100-80GB  0/4   ib-east(mlx5_0,mlx5_1)  llama-70b-r1
gpu-b  cordoned  connected 0.4.0  2m ago     4xH100-80GB  0/4   ib-east(mlx5_0)         llama-70b-r1
gpu-c  lost      disconnected     never      -            0/0   -                       -

NODE   GPU  CLASS      ALLOCATED  REPLICA       PROBLEMS
gpu-a  0    H100-80GB  yes        llama-70b-r1
gpu-a  1    H100-80GB  yes        llama-70b-r1
gpu-a  2    H100-80GB  yes        llama-70b-r1
gpu-a  3    H100-80GB  yes        llama-70b-r1
gpu-b  0    H100-80GB  yes        llama-70b-r1
gpu-b  1    H100-80GB  yes        llama-70b-r1
gpu-b  2    H100-80GB  yes        llama-70b-r1
gpu-b  3    H100-80GB  no         -             ECC errors: 3 uncorrectable; held by a foreign process (pid 4242)
`,
  );
});

test('nodes: a GPU of unknown class is counted as such, unallocated healthy ones as free; no nodes says why', () => {
  const node = { ...NODES[0]!, gpus: [{ index: 0, class: null, allocated: false, replica: null, problems: [] }, { ...NODES[0]!.gpus[1]!, allocated: false, replica: null }] };
  const table = renderNodes([node], NOW);
  assert.match(table, /^gpu-a {2}ready .* 1xunknown,1xH100-80GB {2}2\/2 /m);
  assert.match(table, /^gpu-a {2}0 {4}unknown {4}no {9}-$/m);
  assert.is(renderNodes([], NOW), 'no nodes: no agent has registered with this server\n');
});

test('models: desired, ready and held replicas, and why fewer are ready with when placement is tried next', () => {
  assert.is(
    renderModels(MODELS),
    `MODEL      MIN  MAX  DESIRED  READY  REPLICAS  WHY FEWER
llama-70b  1    2    2        1      1         no node has 4 free H100-80GB GPUs on one fabric; next placement in 8s
qwen-7b    0    1    0        0      0
`,
  );
  assert.match(renderModels([{ ...MODELS[0]!, reason: null, retry_in_ms: 1 }]), /1 {9}next placement in 1s\n$/);
});

test('replicas: one line per shard, the replica named on its first; the reasons of replica and shard both shown', () => {
  assert.is(
    renderReplicas(REPLICAS, NOW),
    `REPLICA       MODEL      PROFILE       STATE               SINCE   SHARD            NODE   RANK  GPUS     PORT  SHARD STATE  WHY
llama-70b-r1  llama-70b  h100-tp4-pp2  ready               4m ago  llama-70b-r1-s0  gpu-a  0     0,1,2,3  8000  ready
                                                                   llama-70b-r1-s1  gpu-b  1     0,1,2    -     ready
qwen-7b-r4    qwen-7b    any-tp1       failed (recovered)  2s ago  qwen-7b-r4-s0    gpu-c  0     0        8100  unknown      shard qwen-7b-r4-s0 failed; node gpu-c lost
`,
  );
  const pending = { ...REPLICAS[0]!, state: 'pending' as const, reason: 'waiting for gpu-a to acknowledge', shards: [] };
  assert.match(renderReplicas([pending], NOW), /^llama-70b-r1 +llama-70b +h100-tp4-pp2 +pending +4m ago +- +waiting for gpu-a to acknowledge$/m);
  assert.is(renderReplicas([], NOW), 'no replicas\n');
});

test('explain-placement: the verdict, then every candidate with its code and reason', () => {
  assert.is(
    renderExplanation(EXPLANATION),
    `llama-70b: no replica can be placed now

PROFILE       NODE   FABRIC   CODE          REASON
h100-tp4-pp2  gpu-a  ib-east  gpus_busy     0 of 4 GPUs free
h100-tp4-pp2  gpu-b  ib-east  cordoned      node is cordoned
a100-tp8      -      -        no_gpu_class  no node has A100-80GB GPUs
`,
  );
  const placed = { ...EXPLANATION, placed: true, placement: { profile: 'h100-tp4-pp2', nodes: ['gpu-a', 'gpu-b'] }, candidates: [] };
  assert.is(renderExplanation(placed), 'llama-70b: a replica can be placed now, with profile h100-tp4-pp2 on gpu-a, gpu-b\n');
});

test('a node command says what the node is now', () => {
  assert.is(renderNodeState({ ...NODES[0]!, state: 'draining' }), 'node gpu-a is draining\n');
});

test('logs: each shard under a header naming it and its node; one that could not be read says why', () => {
  assert.is(
    renderLogs([logsOf('llama-70b-r1-s0', 'gpu-a', 2), logsOf('qwen-7b-r4-s0', 'gpu-c', 2)]),
    `==> shard llama-70b-r1-s0 on node gpu-a <==
INFO Started server process
INFO Uvicorn running on http://10.0.0.1:8000

==> shard qwen-7b-r4-s0 on node gpu-c <==
(could not read its output: node gpu-c is lost: its output cannot be read)
`,
  );
});

test('reload: the models it changed, or every problem of a file it did not apply', () => {
  assert.is(
    renderReload({ ok: true, source: 'llmgw.yaml', models: { added: ['qwen-7b'], removed: ['old-13b', 'old-7b'], changed: [] }, restart_needed: [] }),
    'reloaded llmgw.yaml:\n  added: qwen-7b\n  removed (drained, then stopped): old-13b, old-7b\n',
  );
  assert.is(renderReload({ ok: true, source: 'llmgw.yaml', models: { added: [], removed: [], changed: [] }, restart_needed: [] }), 'reloaded llmgw.yaml: no model changed\n');
  assert.is(
    renderReload({ ok: true, source: 'llmgw.yaml', models: { added: [], removed: [], changed: ['m'] }, restart_needed: ['listen', 'router'] }),
    'reloaded llmgw.yaml:\n  changed: m\n  not applied until a restart: listen, router\n',
  );
  assert.is(
    renderReload({
      ok: false,
      source: 'llmgw.yaml',
      problems: [
        { source: 'llmgw.yaml', path: 'models[0].profiles[0].tp', message: 'must be >= 1', line: 9, column: 13 },
        { source: 'llmgw.yaml', path: '', message: 'line 3, column 1: bad indentation' },
      ],
    }),
    'llmgw.yaml was not applied; the server runs on as before. Its problems:\n  llmgw.yaml: models[0].profiles[0].tp: must be >= 1\n  llmgw.yaml: line 3, column 1: bad indentation\n',
  );
});

test.run();
