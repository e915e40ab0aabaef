// The catalog keys the control plane places from: a model's source and scaling, and a
// profile's GPUs per node, launch mode, arguments, environment, priority, weight and
// startup timeout. Each bad value is refused with the file, the path and the reason.
import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { parseConfig } from '../../src/config/index.js';
import { BASE, problems, rejection } from './helpers.js';

/** BASE with qwen2.5-32b's one profile given these extra lines (8 spaces deep). */
const withProfile = (...lines: string[]): string => BASE.replace('        tp: 1\n', `        tp: 1\n${lines.map((l) => `        ${l}\n`).join('')}`);
/** BASE with one more model, placed by the profile given as a flow mapping. */
const withModel = (yaml: string): string => BASE.replace('endpoints:', `  - name: extra\n${yaml}endpoints:`);

test('gpus_per_node defaults to tp × pp / nodes', () => {
  const c = parseConfig(withModel('    profiles: [{ name: p, gpu_class: h100-80g, tp: 8, pp: 2, nodes: 4, launch_mode: ray }]\n'), 'llmgw.yaml', {});
  assert.is(c.models[3]!.profiles[0]!.gpus_per_node, 4);
});

test('gpus_per_node × nodes must equal tp × pp, with the numbers', () => {
  assert.equal(problems(withProfile('gpus_per_node: 2')), [
    'llmgw.yaml: models[2].profiles[0].gpus_per_node: gpus_per_node × nodes = 2 × 1 = 2, but tp × pp = 1 × 1 = 1: every GPU of the replica is on one of its nodes',
  ]);
  assert.equal(problems(withModel('    profiles: [{ name: p, gpu_class: g, tp: 4, pp: 2, nodes: 2, gpus_per_node: 2, launch_mode: mp }]\n')), [
    'llmgw.yaml: models[3].profiles[0].gpus_per_node: gpus_per_node × nodes = 2 × 2 = 4, but tp × pp = 4 × 2 = 8: every GPU of the replica is on one of its nodes',
  ]);
  parseConfig(withModel('    profiles: [{ name: p, gpu_class: g, tp: 4, pp: 2, nodes: 2, gpus_per_node: 4, launch_mode: mp }]\n'), 'llmgw.yaml', {});
});

test('without gpus_per_node, tp × pp must spread evenly over the nodes', () => {
  assert.equal(problems(withModel('    profiles: [{ name: p, gpu_class: g, tp: 3, pp: 2, nodes: 4, launch_mode: ray }]\n')), [
    'llmgw.yaml: models[3].profiles[0].nodes: tp × pp = 3 × 2 = 6 GPUs do not spread evenly over 4 nodes: change nodes, tp or pp',
  ]);
});

test('parallel sizes are bounded, so their products stay exact', () => {
  assert.equal(problems(withProfile('pp: 1025')), ['llmgw.yaml: models[2].profiles[0].pp: must be ≤ 1024']);
  assert.equal(problems(withProfile('gpus_per_node: 0')), ['llmgw.yaml: models[2].profiles[0].gpus_per_node: must be ≥ 1']);
});

test('a multi-node vLLM profile must name its launch mode; single-node may', () => {
  assert.equal(problems(withModel('    profiles: [{ name: p, gpu_class: g, tp: 8, nodes: 2 }]\n')), [
    'llmgw.yaml: models[3].profiles[0].launch_mode: is required for a multi-node vLLM profile (nodes: 2): ray or mp (vLLM 0.11 and later), whichever its vLLM version runs',
  ]);
  const c = parseConfig(withProfile('launch_mode: ray'), 'llmgw.yaml', {});
  assert.is(c.models[2]!.profiles[0]!.launch_mode, 'ray');
  assert.equal(problems(withProfile('launch_mode: slurm')), ['llmgw.yaml: models[2].profiles[0].launch_mode: must be one of ray, mp']);
});

test('an SGLang profile refuses a launch mode, single- or multi-node', () => {
  const why = 'is a vLLM setting: SGLang launches its ranks itself; remove it';
  assert.equal(problems(withProfile('engine: sglang', 'launch_mode: mp')), [`llmgw.yaml: models[2].profiles[0].launch_mode: ${why}`]);
  assert.equal(problems(withModel('    profiles: [{ name: p, engine: sglang, gpu_class: g, tp: 8, nodes: 2, launch_mode: ray }]\n')), [
    `llmgw.yaml: models[3].profiles[0].launch_mode: ${why}`,
  ]);
  parseConfig(withModel('    profiles: [{ name: p, engine: sglang, gpu_class: g, tp: 8, nodes: 2 }]\n'), 'llmgw.yaml', {});
});

test('args are a list of strings; env a map of variable names to strings', () => {
  assert.equal(problems(withProfile('args: --enforce-eager')), ['llmgw.yaml: models[2].profiles[0].args: must be a list, got "--enforce-eager"']);
  assert.equal(problems(withProfile('args: [--max-num-seqs, 128]')), ['llmgw.yaml: models[2].profiles[0].args[1]: must be a string, got 128']);
  assert.equal(problems(withProfile('env: { NCCL_DEBUG: 1 }')), ['llmgw.yaml: models[2].profiles[0].env.NCCL_DEBUG: must be a string, got 1']);
  assert.equal(problems(withProfile('env: { 1BAD: x, OK: y, "A-B": z }')), [
    'llmgw.yaml: models[2].profiles[0].env["1BAD"]: is not an environment variable name (letters, digits and _, not starting with a digit)',
    'llmgw.yaml: models[2].profiles[0].env.A-B: is not an environment variable name (letters, digits and _, not starting with a digit)',
  ]);
  const c = parseConfig(withProfile('args: [--max-num-seqs, "128"]', 'env: { NCCL_DEBUG: INFO, _X1: "" }'), 'llmgw.yaml', {});
  assert.equal(c.models[2]!.profiles[0]!.args, ['--max-num-seqs', '128']);
  assert.equal(c.models[2]!.profiles[0]!.env, { NCCL_DEBUG: 'INFO', _X1: '' });
});

test('priority is an integer, weight above 0, startup_timeout_ms a timer in ms', () => {
  assert.equal(problems(withProfile('priority: 1.5')), ['llmgw.yaml: models[2].profiles[0].priority: must be an integer, got 1.5']);
  assert.equal(problems(withProfile('weight: 0')), ['llmgw.yaml: models[2].profiles[0].weight: must be > 0']);
  assert.equal(problems(withProfile('startup_timeout_ms: 0')), ['llmgw.yaml: models[2].profiles[0].startup_timeout_ms: must be ≥ 1']);
  assert.equal(problems(withProfile('startup_timeout_ms: 2147483648')), ['llmgw.yaml: models[2].profiles[0].startup_timeout_ms: must be ≤ 2147483647']);
  const p = parseConfig(withProfile('priority: -3', 'weight: 0.25', 'startup_timeout_ms: 60000'), 'llmgw.yaml', {}).models[2]!.profiles[0]!;
  assert.equal([p.priority, p.weight, p.startup_timeout_ms], [-3, 0.25, 60000]);
});

test("a profile's old replicas key points at the model's scaling", () => {
  assert.equal(problems(withProfile('replicas: 2')), [
    "llmgw.yaml: models[2].profiles[0]: 'replicas' is no longer a key here: a profile no longer sets a replica count: the model's scaling: {min, max} says how many replicas to keep",
  ]);
  const e = rejection(withProfile('replicas: 2'));
  assert.equal((e.details?.problems as { line?: number }[])[0]!.line, 15, 'located at the key');
});

test('a Go-style startup_timeout points at startup_timeout_ms', () => {
  assert.equal(problems(withProfile('startup_timeout: 20m')), [
    "llmgw.yaml: models[2].profiles[0]: 'startup_timeout' is no longer a key here: durations carry their unit here: set startup_timeout_ms, in ms",
  ]);
});

test('replicas is still a key of a simulate entry', () => {
  assert.is(parseConfig(BASE + '    replicas: 2\n', 'llmgw.yaml', {}).simulate[0]!.replicas, 2);
});

test('source defaults to the model name and may not be empty', () => {
  const c = parseConfig(BASE.replace('  - name: qwen2.5-32b\n', '  - name: qwen2.5-32b\n    source: /models/Qwen2.5-32B-Instruct\n'), 'llmgw.yaml', {});
  assert.is(c.models[2]!.source, '/models/Qwen2.5-32B-Instruct');
  assert.is(c.models[0]!.source, 'llama-3.1-8b');
  assert.equal(problems(BASE.replace('  - name: qwen2.5-32b\n', '  - name: qwen2.5-32b\n    source: ""\n')), ['llmgw.yaml: models[2].source: must not be empty']);
});

const scaled = (scaling: string): string => BASE.replace('  - name: qwen2.5-32b\n', `  - name: qwen2.5-32b\n    scaling: ${scaling}\n`);

test('scaling: min defaults to 1 with profiles, max to max(min, 1)', () => {
  const scaling = (s: string) => parseConfig(scaled(s), 'llmgw.yaml', {}).models[2]!.scaling;
  assert.equal(scaling('{}'), { min: 1, max: 1 });
  assert.equal(scaling('{ min: 3 }'), { min: 3, max: 3 });
  assert.equal(scaling('{ min: 0 }'), { min: 0, max: 1 });
  assert.equal(scaling('{ max: 5 }'), { min: 1, max: 5 });
  assert.equal(scaling('{ min: 0, max: 0 }'), { min: 0, max: 0 }, 'a model parked with nothing placed');
});

test('scaling: min must not exceed max, defaults included', () => {
  assert.equal(problems(scaled('{ min: 4, max: 2 }')), ['llmgw.yaml: models[2].scaling: min 4 is above max 2']);
  assert.equal(problems(scaled('{ max: 0 }')), ['llmgw.yaml: models[2].scaling: the default min 1 (a model with profiles keeps one replica) is above max 0']);
  assert.equal(problems(scaled('{ min: -1 }')), ['llmgw.yaml: models[2].scaling.min: must be ≥ 0']);
  assert.equal(problems(scaled('{ mni: 1 }')), ["llmgw.yaml: models[2].scaling: unknown key 'mni' (did you mean 'min'?)"]);
});

test('scaling: a model without profiles asks for no replica', () => {
  const text = BASE.replace('  - name: llama-3.3-70b\n', '  - name: llama-3.3-70b\n    scaling: { min: 2 }\n');
  assert.equal(problems(text), ['llmgw.yaml: models[1].scaling.min: asks for 2 replicas, but the model has no profiles to place them from']);
});

test.run();
