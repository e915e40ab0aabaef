import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { parseConfig } from '../../src/config/index.js';
import { placedModels } from '../../src/control/catalog.js';
import { Inventory } from '../../src/control/inventory.js';
import { placeReplica } from '../../src/control/placement.js';
import { gpus, node } from './cluster.js';

// Loaded through the real loader, so the defaults are the ones a file gets.
const CONFIG = `
agent_insecure: true
models:
  - name: served-elsewhere
  - name: llama-3.3-70b
    source: meta-llama/Llama-3.3-70B-Instruct
    scaling: { min: 2, max: 6 }
    profiles:
      - { name: a100-tp8, gpu_class: a100-80g, tp: 8 }
      - { name: h100-tp4, gpu_class: h100-80g, tp: 4, priority: 10, weight: 2 }
      - { name: l40s-tp8x2, gpu_class: l40s-45g, tp: 8, nodes: 2, launch_mode: mp, priority: -5 }
      - { name: a100-tp4, gpu_class: a100-80g, tp: 4, args: [--enforce-eager] }
      - { name: h100-tp2pp2, gpu_class: h100-80g, tp: 2, pp: 2, priority: 10, env: { NCCL_DEBUG: INFO } }
  - name: qwen2.5-7b
    profiles: [{ name: l40s-tp1, engine: sglang, gpu_class: l40s-45g, tp: 1, startup_timeout_ms: 300000 }]
simulate:
  - model: served-elsewhere
`;

test('only models with profiles are placed, in file order', () => {
  const placed = placedModels(parseConfig(CONFIG, 'llmgw.yaml', {}));
  assert.equal(
    placed.map((m) => m.name),
    ['llama-3.3-70b', 'qwen2.5-7b'],
  );
});

test('profiles are by priority, highest first, equal priorities in file order', () => {
  const [llama] = placedModels(parseConfig(CONFIG, 'llmgw.yaml', {}));
  assert.equal(
    llama!.profiles.map((p) => `${p.name}@${p.priority}`),
    ['h100-tp4@10', 'h100-tp2pp2@10', 'a100-tp8@0', 'a100-tp4@0', 'l40s-tp8x2@-5'],
  );
});

test('every default is filled: source, scaling, and each profile key', () => {
  const [llama, qwen] = placedModels(parseConfig(CONFIG, 'llmgw.yaml', {}));
  assert.is(llama!.source, 'meta-llama/Llama-3.3-70B-Instruct');
  assert.equal(llama!.scaling, { min: 2, max: 6 });
  assert.equal(qwen, {
    name: 'qwen2.5-7b',
    source: 'qwen2.5-7b',
    scaling: { min: 1, max: 1 },
    profiles: [
      {
        name: 'l40s-tp1',
        engine: 'sglang',
        gpu_class: 'l40s-45g',
        tp: 1,
        pp: 1,
        nodes: 1,
        gpus_per_node: 1,
        args: [],
        env: {},
        priority: 0,
        weight: 1,
        startup_timeout_ms: 300000,
      },
    ],
  });
  const byName = new Map(llama!.profiles.map((p) => [p.name, p]));
  assert.equal(byName.get('l40s-tp8x2'), {
    name: 'l40s-tp8x2',
    engine: 'vllm',
    gpu_class: 'l40s-45g',
    tp: 8,
    pp: 1,
    nodes: 2,
    gpus_per_node: 4,
    launch_mode: 'mp',
    args: [],
    env: {},
    priority: -5,
    weight: 1,
    startup_timeout_ms: 1200000,
  });
  assert.is(byName.get('h100-tp2pp2')!.gpus_per_node, 4);
  assert.equal(byName.get('h100-tp2pp2')!.env, { NCCL_DEBUG: 'INFO' });
  assert.equal(byName.get('a100-tp4')!.args, ['--enforce-eager']);
  assert.is(byName.get('h100-tp4')!.weight, 2);
  assert.not.ok('launch_mode' in byName.get('h100-tp4')!, 'an unset launch mode stays unset');
});

test('a config without profiles places nothing', () => {
  assert.equal(placedModels(parseConfig('models: [{ name: m }]\nsimulate: [{ model: m }]\n', 'llmgw.yaml', {})), []);
});

test('a placed model goes to placement as it is: its first profile that fits wins', () => {
  const [llama] = placedModels(parseConfig(CONFIG, 'llmgw.yaml', {}));
  const inventory = new Inventory();
  inventory.register(node('n1', gpus('a100-80g', 8)));
  inventory.register(node('n2', gpus('h100-80g', 8)));
  const r = placeReplica(inventory.nodes(), { model: llama!.name, replica: 'r1', profiles: llama!.profiles, portRange: [20000, 20999] });
  assert.is(r.placement?.profile, 'h100-tp4');
  assert.is(r.placement?.shards[0]!.gpus.length, 4);
});

test.run();
