import { chmodSync } from 'node:fs';
import { resolve } from 'node:path';
import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { LlmgwError } from '../../src/errors.js';
import { configSchema, DEFAULT_CONFIG_SOURCE, loadConfig, parseConfig } from '../../src/config/index.js';
import type { SchemaNode } from '../../src/config/schema.js';
import { BASE, problems, tempFile } from './helpers.js';

// The agent port's TLS files must exist when the config loads.
const CA = tempFile('ca.pem', '-----BEGIN CERTIFICATE-----\n');
const CERT = tempFile('server.pem', '-----BEGIN CERTIFICATE-----\n');
const KEY = tempFile('server.key', '-----BEGIN PRIVATE KEY-----\n');

const FULL = `# yaml-language-server: $schema=../schema/llmgw.schema.json
listen: "0.0.0.0:8080"
admin_listen: "127.0.0.1:9090"
agent_listen: "0.0.0.0:9091"
agent_tls: { ca: ${CA}, cert: ${CERT}, key: ${KEY} }
agent_insecure: false
control:
  interval_ms: 250
  unreachable_after_ms: 5000
  lost_after_ms: 30000
  port_range: [30000, 30099]
  drain_grace_ms: 60000
  settle_ms: 4000
admin_token: s3cret
log_level: debug
runtime:
  ask_timeout_ms: 1000
  shutdown_timeout_ms: 2000
router:
  max_body_bytes: 1048576
  connect_timeout_ms: 100
  first_token_timeout_ms: 200
  idle_timeout_ms: 300
  poll_interval_ms: 400
  load_refresh_ms: 450
  stale_after_ms: 500
  default_profile: interactive
  profiles:
    - name: interactive
      scorers: { queue: 1, kv: 0.5, inflight: 2, prefix: 3, session: 1, weight: 0.1 }
      band: first
  admission:
    enabled: false
    bands:
      - { name: first, queue_limit: 5, queue_timeout_ms: 100 }
      - { name: second, queue_limit: 50, queue_timeout_ms: 1000 }
    default_band: second
    priority_header: true
    target_waiting_per_replica: 1.5
    reserved_share: 0.3
    kv_ceiling: 0.8
    stale_inflight_per_replica: 16
    max_queued: 40
    aging_ms: 2000
    prefill_tokens_per_replica: 4096
    recall: false
  retries:
    max_attempts: 2
    budget_percent: 30
    min_retry_concurrency: 5
  cooldown:
    failures: 3
    ms: 600
  breaker:
    failures: 7
    open_ms: 700
    max_open_ms: 800
  prefix:
    block_chars: 128
    max_blocks: 64
    index_entries: 1000
    offload_bytes: 9000
models:
  - name: llama-3.1-8b
    aliases: [llama-8b]
    fallbacks: [llama]
    routing_profile: chat
    max_model_len: 32768
    source: /models/llama-3.1-8b-instruct
    scaling: { min: 2, max: 4 }
    profiles:
      - name: l40s-tp1
        engine: vllm
        gpu_class: l40s
        tp: 1
        pp: 1
        nodes: 1
        gpus_per_node: 1
        launch_mode: mp
        args: [--max-num-seqs, "128"]
        env: { VLLM_LOGGING_LEVEL: DEBUG }
        priority: 10
        weight: 0.5
        startup_timeout_ms: 300000
    units: { per_million: { prompt: 1.5, completion: 6, cached: 0.25 } }
  - name: llama-3.3-70b
    aliases: [llama]
    fallbacks: [llama-8b]
    routing_profile: batch
    max_model_len: 131072
    source: meta-llama/Llama-3.3-70B-Instruct
    scaling: { min: 0, max: 0 }
    profiles:
      - name: h100-tp4
        engine: vllm
        gpu_class: h100-80g
        tp: 4
        pp: 2
        nodes: 2
        gpus_per_node: 4
        launch_mode: ray
        args: [--enforce-eager]
        env: { NCCL_DEBUG: INFO, A_1: "" }
        priority: -1
        weight: 2
        startup_timeout_ms: 2400000
    units: gpu_seconds
endpoints:
  - id: gpu-a-0
    url: https://gpu-a-0.example:8000
    models: [llama-3.1-8b]
    pool: ib-a/h100-80g
    weight: 2.5
    priority: -1
    max_num_seqs: 128
    max_num_batched_tokens: 2048
    priority_scheduling: lower-first
    gpus: 8
tenancy:
  store: data/tenancy.db
  hard_budgets: true
  budget_fallback: llama-8b
  retention_days: 7
simulate:
  - model: llama-3.1-8b
    replicas: 3
    speed: 10
    flavor: sglang
    seed: 7
    max_num_seqs: 64
    num_gpu_blocks: 1000
`;

test('a config that sets every key is read as written', () => {
  const c = parseConfig(FULL, 'full.yaml', {});
  assert.equal(c.router, {
    max_body_bytes: 1048576,
    connect_timeout_ms: 100,
    first_token_timeout_ms: 200,
    idle_timeout_ms: 300,
    poll_interval_ms: 400,
    load_refresh_ms: 450,
    stale_after_ms: 500,
    default_profile: 'interactive',
    profiles: [{ name: 'interactive', scorers: { queue: 1, kv: 0.5, inflight: 2, prefix: 3, session: 1, weight: 0.1 }, band: 'first' }],
    admission: {
      enabled: false,
      bands: [
        { name: 'first', queue_limit: 5, queue_timeout_ms: 100 },
        { name: 'second', queue_limit: 50, queue_timeout_ms: 1000 },
      ],
      default_band: 'second',
      priority_header: true,
      target_waiting_per_replica: 1.5,
      reserved_share: 0.3,
      kv_ceiling: 0.8,
      stale_inflight_per_replica: 16,
      max_queued: 40,
      aging_ms: 2000,
      prefill_tokens_per_replica: 4096,
      prefill_ms_per_replica: 25,
      recall: false,
    },
    retries: { max_attempts: 2, budget_percent: 30, min_retry_concurrency: 5 },
    cooldown: { failures: 3, ms: 600 },
    breaker: { failures: 7, open_ms: 700, max_open_ms: 800 },
    prefix: { block_chars: 128, max_blocks: 64, index_entries: 1000, offload_bytes: 9000 },
  });
  assert.equal(c.runtime, { ask_timeout_ms: 1000, shutdown_timeout_ms: 2000 });
  assert.is(c.admin_token, 's3cret');
  assert.is(c.log_level, 'debug');
  assert.is(c.agent_listen, '0.0.0.0:9091');
  assert.equal(c.agent_tls, { ca: CA, cert: CERT, key: KEY });
  assert.is(c.agent_insecure, false);
  assert.equal(c.control, { interval_ms: 250, unreachable_after_ms: 5000, lost_after_ms: 30000, port_range: [30000, 30099], drain_grace_ms: 60000, settle_ms: 4000 });
  assert.is(c.models[0]!.source, '/models/llama-3.1-8b-instruct');
  assert.equal(c.models[0]!.scaling, { min: 2, max: 4 });
  assert.equal(c.models[1]!.scaling, { min: 0, max: 0 });
  assert.equal(c.models[0]!.profiles[0], {
    name: 'l40s-tp1',
    engine: 'vllm',
    gpu_class: 'l40s',
    tp: 1,
    pp: 1,
    nodes: 1,
    gpus_per_node: 1,
    launch_mode: 'mp',
    args: ['--max-num-seqs', '128'],
    env: { VLLM_LOGGING_LEVEL: 'DEBUG' },
    priority: 10,
    weight: 0.5,
    startup_timeout_ms: 300000,
  });
  assert.equal(c.models[1]!.profiles[0], {
    name: 'h100-tp4',
    engine: 'vllm',
    gpu_class: 'h100-80g',
    tp: 4,
    pp: 2,
    nodes: 2,
    gpus_per_node: 4,
    launch_mode: 'ray',
    args: ['--enforce-eager'],
    env: { NCCL_DEBUG: 'INFO', A_1: '' },
    priority: -1,
    weight: 2,
    startup_timeout_ms: 2400000,
  });
  assert.equal(c.endpoints[0], {
    id: 'gpu-a-0',
    url: 'https://gpu-a-0.example:8000',
    models: ['llama-3.1-8b'],
    pool: 'ib-a/h100-80g',
    weight: 2.5,
    priority: -1,
    max_num_seqs: 128,
    max_num_batched_tokens: 2048,
    priority_scheduling: 'lower-first',
    gpus: 8,
  });
  assert.equal(c.models[0]!.units, { per_million: { prompt: 1.5, completion: 6, cached: 0.25 } });
  assert.is(c.models[1]!.units, 'gpu_seconds');
  // The store is found beside the config file, wherever the server was started from.
  assert.equal(c.tenancy, { store: resolve('data/tenancy.db'), hard_budgets: true, budget_fallback: 'llama-8b', retention_days: 7 });
  assert.equal(c.simulate[0], { model: 'llama-3.1-8b', replicas: 3, speed: 10, flavor: 'sglang', seed: 7, max_num_seqs: 64, num_gpu_blocks: 1000 });
  assert.is(c.models[0]!.max_model_len, 32768);
  assert.is(c.models[0]!.routing_profile, 'chat');
});

test('every default is filled in, and optional keys stay unset', () => {
  const c = parseConfig(BASE, 'llmgw.yaml', {});
  assert.is(c.listen, '127.0.0.1:4000');
  assert.is(c.admin_listen, '127.0.0.1:4001');
  assert.is(c.admin_token, undefined);
  assert.is(c.log_level, 'info');
  assert.equal(c.runtime, { ask_timeout_ms: 5000, shutdown_timeout_ms: 10000 });
  assert.equal(c.router, {
    max_body_bytes: 4194304,
    connect_timeout_ms: 2000,
    first_token_timeout_ms: 60000,
    idle_timeout_ms: 30000,
    poll_interval_ms: 1000,
    load_refresh_ms: 100,
    stale_after_ms: 5000,
    default_profile: 'chat',
    profiles: [],
    admission: {
      enabled: true,
      bands: [
        { name: 'platinum', queue_limit: 1000, queue_timeout_ms: 30000 },
        { name: 'gold', queue_limit: 1000, queue_timeout_ms: 30000 },
        { name: 'silver', queue_limit: 1000, queue_timeout_ms: 60000 },
        { name: 'bronze', queue_limit: 10000, queue_timeout_ms: 300000 },
      ],
      priority_header: false,
      target_waiting_per_replica: 2,
      reserved_share: 0.1,
      kv_ceiling: 0.95,
      stale_inflight_per_replica: 64,
      max_queued: 10000,
      aging_ms: 10000,
      prefill_tokens_per_replica: 4096,
      prefill_ms_per_replica: 25,
      recall: true,
    },
    retries: { max_attempts: 3, budget_percent: 20, min_retry_concurrency: 10 },
    cooldown: { failures: 2, ms: 2000 },
    breaker: { failures: 5, open_ms: 10000, max_open_ms: 300000 },
    prefix: { block_chars: 256, max_blocks: 256, index_entries: 200000, offload_bytes: 32768 },
  });
  assert.is(c.agent_listen, '127.0.0.1:4002');
  assert.is(c.agent_tls, undefined);
  assert.is(c.agent_insecure, true, 'as BASE sets it');
  assert.equal(c.control, { interval_ms: 1000, unreachable_after_ms: 15000, lost_after_ms: 60000, port_range: [20000, 20999], drain_grace_ms: 120000, settle_ms: 15000 });
  // No profiles: nothing to place, so no replica asked for; the engine loads the name.
  assert.equal(c.models[1], { name: 'llama-3.3-70b', aliases: ['llama'], fallbacks: [], stream_from_engine: true, source: 'llama-3.3-70b', scaling: { min: 0, max: 1 }, profiles: [], units: 'tokens' });
  assert.is(c.models[2]!.source, 'qwen2.5-32b');
  assert.equal(c.models[2]!.scaling, { min: 1, max: 1 }, 'a model with profiles keeps one replica');
  assert.equal(c.models[2]!.profiles[0], {
    name: 'h100-tp1',
    engine: 'vllm',
    gpu_class: 'h100-80g',
    tp: 1,
    pp: 1,
    nodes: 1,
    gpus_per_node: 1,
    args: [],
    env: {},
    priority: 0,
    weight: 1,
    startup_timeout_ms: 1200000,
  });
  assert.equal(c.endpoints[0], { id: 'gpu-a-0', url: 'http://10.0.0.5:8000', models: ['llama-3.1-8b', 'llama-3.3-70b'], weight: 1, priority: 0, gpus: 1 });
  assert.is(c.tenancy, undefined, 'tenancy is off unless configured');
  assert.equal(c.simulate[0], { model: 'llama-3.1-8b', replicas: 1, speed: 1, flavor: 'vllm', seed: 0 });
});

test('a profile that sets some scorers leaves the others at 0', () => {
  const c = parseConfig(`${BASE}router:\n  profiles:\n    - name: sticky\n      scorers: { session: 1 }\n`, 'llmgw.yaml', {});
  assert.equal(c.router.profiles[0], { name: 'sticky', scorers: { queue: 0, kv: 0, inflight: 0, prefix: 0, session: 1, weight: 0 } });
});

test('a file with only a served model is all defaults otherwise', () => {
  const c = parseConfig('# one model, nothing else\nmodels: [{ name: m }]\nsimulate: [{ model: m }]\n', 'small.yaml', {});
  assert.is(c.listen, '127.0.0.1:4000');
  assert.equal(c.endpoints, []);
  assert.is(c.router.max_body_bytes, 4194304);
});

test('an empty file, or an empty catalog, is refused: it would serve nothing', () => {
  const why = "models: lists no model, so nothing would be served: add a model and an endpoint or a simulate entry that serves it (run without --config for the embedded default)";
  assert.equal(problems('# nothing yet\n'), [`llmgw.yaml: ${why}`]);
  assert.equal(problems('models: []\n'), [`llmgw.yaml: ${why}`]);
});

/** FULL on a plaintext agent port, with simulated nodes (which refuse agent_tls). */
const SIMULATED = FULL.replace(/agent_tls: .*\nagent_insecure: false\n/, 'agent_insecure: true\n') + 'simulate_nodes:\n  - { name: sim-a, gpus: 8 }\n  - { name: sim-b }\n';

test('simulated nodes are read as written, gpus 4 by default', () => {
  assert.equal(parseConfig(SIMULATED, 'full.yaml', {}).simulate_nodes, [
    { name: 'sim-a', gpus: 8 },
    { name: 'sim-b', gpus: 4 },
  ]);
});

test('a loaded config has exactly the keys of the schema, all of them after defaults', () => {
  const c = { ...parseConfig(FULL, 'full.yaml', {}), simulate_nodes: parseConfig(SIMULATED, 'full.yaml', {}).simulate_nodes };
  const check = (value: unknown, node: SchemaNode, at: string): void => {
    if (node.type === 'object' && node.propertyNames !== undefined) {
      const values = Object.values(value as object);
      assert.ok(values.length > 0, `${at} is exercised`);
      for (const v of values) check(v, node.additionalProperties as SchemaNode, `${at}{}`);
    } else if (node.type === 'object') {
      const keys = Object.keys(value as object).sort();
      assert.equal(keys, Object.keys(node.properties ?? {}).sort(), `keys of ${at || 'the root'}`);
      for (const k of keys) check((value as Record<string, unknown>)[k], node.properties![k]!, `${at}.${k}`);
    } else if (node.type === 'array') {
      assert.ok((value as unknown[]).length > 0, `${at} is exercised`);
      for (const v of value as unknown[]) check(v, node.items!, `${at}[]`);
    }
  };
  check(c, configSchema as SchemaNode, '');
});

test('the embedded default is valid: loopback ports, one placed model on two simulated nodes', () => {
  const c = loadConfig({ env: {} });
  assert.is(c.listen, '127.0.0.1:4000');
  assert.is(c.admin_listen, '127.0.0.1:4001');
  assert.is(c.agent_listen, '127.0.0.1:4002');
  assert.is(c.agent_insecure, true);
  assert.is(c.control.settle_ms, 1000);
  assert.equal(c.models.map((m) => [m.name, m.aliases, m.scaling]), [['llmgw-sim', ['sim'], { min: 2, max: 4 }]]);
  assert.equal(
    c.models[0]!.profiles.map((p) => [p.name, p.engine, p.gpu_class, p.tp, p.pp, p.nodes]),
    [['h100-tp1', 'vllm', 'h100-80g', 1, 1, 1]],
  );
  assert.equal(c.simulate_nodes, [
    { name: 'sim-node-a', gpus: 4 },
    { name: 'sim-node-b', gpus: 4 },
  ]);
  assert.equal([c.simulate, c.endpoints], [[], []]);
});

test('the embedded default goes through the same checks: a bad env value is reported against it', () => {
  try {
    loadConfig({ env: { LLMGW_RUNTIME__ASK_TIMEOUT_MS: '0' } });
    assert.unreachable('accepted');
  } catch (err) {
    assert.instance(err, LlmgwError);
    assert.is((err as LlmgwError).message, 'env LLMGW_RUNTIME__ASK_TIMEOUT_MS: must be ≥ 1');
  }
  assert.is(DEFAULT_CONFIG_SOURCE, '(embedded default)');
});

test('the result is frozen all the way down', () => {
  const c = parseConfig(FULL, 'full.yaml', {});
  assert.ok(Object.isFrozen(c));
  assert.ok(Object.isFrozen(c.router));
  assert.ok(Object.isFrozen(c.models));
  assert.ok(Object.isFrozen(c.models[1]!.profiles[0]));
  assert.ok(Object.isFrozen(c.endpoints[0]!.models));
  assert.throws(() => {
    (c as { listen: string }).listen = 'x';
  }, TypeError);
  assert.throws(() => (c.models as unknown as string[]).push('x'), TypeError);
});

test('loadConfig reads the file at path', () => {
  const path = tempFile('llmgw.yaml', BASE.replace('127.0.0.1:4000', '127.0.0.1:5000'));
  const c = loadConfig({ path, env: {} });
  assert.is(c.listen, '127.0.0.1:5000');
  assert.is(c.models.length, 3);
});

test('loadConfig takes the path from LLMGW_CONFIG when none is given, and path wins over it', () => {
  const served = 'models: [{ name: m }]\nsimulate: [{ model: m }]\n';
  const a = tempFile('a.yaml', 'listen: "127.0.0.1:5001"\n' + served);
  const b = tempFile('b.yaml', 'listen: "127.0.0.1:5002"\n' + served);
  assert.is(loadConfig({ env: { LLMGW_CONFIG: a } }).listen, '127.0.0.1:5001');
  assert.is(loadConfig({ path: b, env: { LLMGW_CONFIG: a } }).listen, '127.0.0.1:5002');
});

test('a bad file is reported under the path it was given as', () => {
  const path = tempFile('bad.yaml', 'log_level: loud\nmodels: [{ name: m }]\nsimulate: [{ model: m }]\n');
  try {
    loadConfig({ path, env: {} });
    assert.unreachable('accepted');
  } catch (err) {
    assert.is((err as LlmgwError).message, `${path}: log_level: must be one of debug, info, warn, error, silent`);
  }
});

test('a missing file is LLMGW_CONFIG_UNREADABLE with the OS reason', () => {
  const path = tempFile('x.yaml', '') + '.missing';
  try {
    loadConfig({ path, env: {} });
    assert.unreachable('accepted');
  } catch (err) {
    assert.instance(err, LlmgwError);
    assert.is((err as LlmgwError).code, 'LLMGW_CONFIG_UNREADABLE');
    assert.is((err as LlmgwError).message, `${path}: cannot read the config file: no such file or directory (ENOENT)`);
  }
});

test('a file that cannot be opened says why', () => {
  if (process.getuid?.() === 0) return; // root reads anything
  const path = tempFile('secret.yaml', BASE);
  chmodSync(path, 0o000);
  try {
    loadConfig({ path, env: {} });
    assert.unreachable('accepted');
  } catch (err) {
    assert.is((err as LlmgwError).code, 'LLMGW_CONFIG_UNREADABLE');
    assert.is((err as LlmgwError).message, `${path}: cannot read the config file: permission denied (EACCES)`);
  }
});

test('a directory is unreadable as a config file', () => {
  const dir = tempFile('x.yaml', '').replace(/\/x\.yaml$/, '');
  try {
    loadConfig({ path: dir, env: {} });
    assert.unreachable('accepted');
  } catch (err) {
    assert.is((err as LlmgwError).code, 'LLMGW_CONFIG_UNREADABLE');
    assert.match((err as LlmgwError).message, /\(EISDIR\)$/);
  }
});

test.run();
