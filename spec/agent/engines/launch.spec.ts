// buildLaunch as the supervisor sees it: which command is the shard, which serves HTTP,
// what is health-checked, who waits for whom. The regressions are named after the bugs
// the Go prototype shipped (seed: "Phase 4: make a multi-node replica able to start").
import { test } from '../../support/uvu.js';
import * as assert from 'uvu/assert';
import { buildLaunch, type Launch, type ShardSpec } from '../../../src/agent/engines/index.js';
import { LEADER_IP, NODE_IPS, OPTS, flagValue, multi, single } from './fixtures.js';

/** Every multi-node way to launch, as a function of the rank. */
const MODES: Record<string, (rank: number, over?: Partial<ShardSpec>) => ShardSpec> = {
  'vllm ray': (rank, over) => multi(rank, { launchMode: 'ray', ...over }),
  'vllm mp': (rank, over) => multi(rank, { launchMode: 'mp', ...over }),
  sglang: (rank, over) => multi(rank, { engine: 'sglang', launchMode: undefined, ...over }),
};

const launch = (spec: ShardSpec): Launch => buildLaunch(spec, OPTS);

test('single node: health-checked at /v1/models on loopback for the served name', () => {
  assert.equal(launch(single()).healthCheck, { url: 'http://127.0.0.1:20000/v1/models', servedName: 'llama-3.3-70b' });
  assert.equal(launch(single({ engine: 'sglang' })).healthCheck, { url: 'http://127.0.0.1:20000/v1/models', servedName: 'llama-3.3-70b' });
});

test('the health check goes where the server listens', () => {
  assert.equal(launch(single({ httpHost: '10.0.0.5', httpPort: 8000 })).healthCheck?.url, 'http://10.0.0.5:8000/v1/models');
  assert.equal(launch(single({ httpHost: '::' })).healthCheck?.url, 'http://[::1]:20000/v1/models');
  assert.equal(launch(single({ httpHost: 'fd00::5' })).healthCheck?.url, 'http://[fd00::5]:20000/v1/models');
  for (const [mode, spec] of Object.entries(MODES)) {
    const l = launch(spec(0));
    assert.equal(l.healthCheck, { url: 'http://127.0.0.1:20000/v1/models', servedName: 'deepseek-v3' }, mode);
    assert.is(flagValue(l.commands.at(-1)!.argv, '--port'), '20000', mode);
  }
});

test('a worker rank is never health-checked on a port it does not open', () => {
  // The prototype health-checked every shard at its own port. Only the leader answers, so
  // workers timed out, were reported Failed, and took a healthy replica down with them.
  for (const [mode, spec] of Object.entries(MODES)) {
    for (const rank of [1, 2, 3]) {
      const l = launch(spec(rank, { ranks: 4, tp: 8, pp: 4, nodeIp: NODE_IPS[rank]! }));
      assert.is(l.healthCheck, null, `${mode} rank ${rank}`);
      assert.ok(l.commands.every((c) => !c.servesHttp), `${mode} rank ${rank} has a command that claims to serve HTTP`);
    }
    const leader = launch(spec(0));
    assert.equal(leader.commands.map((c) => c.servesHttp), [...leader.commands.slice(1).map(() => false), true], mode);
    assert.ok(leader.healthCheck, mode);
  }
});

test('workers wait for the leader, the leader never waits', () => {
  for (const [mode, spec] of Object.entries(MODES)) {
    for (const rank of [1, 2, 3]) {
      const { commands } = launch(spec(rank, { ranks: 4, tp: 8, pp: 4, nodeIp: NODE_IPS[rank]! }));
      for (const c of commands) assert.equal(c.waitFor, { host: LEADER_IP, port: 20001, timeoutMs: 120_000 }, `${mode} rank ${rank}`);
    }
    // Rank 0 waits only on what its own earlier command opens (the Ray head), never on a worker.
    const { commands } = launch(spec(0));
    assert.is(commands[0]!.waitFor, undefined, mode);
    for (const c of commands.slice(1)) {
      assert.equal(c.waitFor, { host: LEADER_IP, port: 20001, timeoutMs: 120_000 }, mode);
      assert.is(flagValue(commands[0]!.argv, '--port'), '20001', `${mode}: rank 0 waits for a port its sidecar does not open`);
    }
  }
});

test('ranks started in the wrong order: a worker started before its leader waits instead of failing', () => {
  // The prototype started workers first; both engines put the rendezvous on rank 0, so a
  // worker had nothing to connect to. Now the order between nodes does not matter: a
  // worker's first command is held until the leader's rendezvous port accepts.
  for (const [mode, spec] of Object.entries(MODES)) {
    const first = launch(spec(1)).commands[0]!;
    assert.ok(first.waitFor, `${mode}: the worker's first command starts without waiting`);
    assert.is(first.waitFor!.host, LEADER_IP, mode);
  }
});

test('launch mode ray starts Ray: the head before the server, the join on workers, no vllm on a worker', () => {
  // RayCommand was written and tested but never called, so `launch_mode: ray` ran
  // vllm serve against a cluster that did not exist.
  const leader = launch(multi(0, { launchMode: 'ray' })).commands;
  assert.equal(leader.map((c) => c.argv.slice(0, 3)), [
    ['/opt/vllm/bin/ray', 'start', '--block'],
    ['/opt/vllm/bin/vllm', 'serve', '/models/deepseek-v3'],
  ]);
  assert.ok(leader[0]!.argv.includes('--head'));
  assert.is(flagValue(leader[1]!.argv, '--distributed-executor-backend'), 'ray');
  const worker = launch(multi(1, { launchMode: 'ray' })).commands;
  assert.is(worker.length, 1);
  assert.equal(worker[0]!.argv.slice(0, 3), ['/opt/vllm/bin/ray', 'start', '--block']);
  assert.is(flagValue(worker[0]!.argv, '--address'), '10.0.0.10:20001');
  assert.not.ok(worker.some((c) => c.argv[0] === '/opt/vllm/bin/vllm'), 'a Ray worker runs a vLLM server');
});

test('the Ray head is a sidecar: never the last command, so it is stopped with the shard and its exit is not the shard’s', () => {
  const { commands } = launch(multi(0, { launchMode: 'ray' }));
  const headAt = commands.findIndex((c) => c.argv.includes('--head'));
  assert.is(headAt, 0);
  assert.ok(headAt < commands.length - 1, 'the Ray head is the shard itself');
  assert.not.ok(commands[headAt]!.servesHttp);
  // Under mp and SGLang there is nothing to keep alive beside the engine.
  assert.is(launch(multi(0, { launchMode: 'mp' })).commands.length, 1);
  assert.is(launch(multi(0, { engine: 'sglang', launchMode: undefined })).commands.length, 1);
});

test("every vLLM node advertises its own VLLM_HOST_IP, never the leader's", () => {
  // The prototype set VLLM_HOST_IP to the leader's address on every rank, so all nodes
  // claimed one identity. Under Ray it is on the ray processes too: the raylet's workers inherit it.
  for (const mode of ['ray', 'mp'] as const) {
    for (const rank of [0, 1, 2, 3]) {
      const { commands } = launch(multi(rank, { launchMode: mode, ranks: 4, tp: 8, pp: 4, nodeIp: NODE_IPS[rank]! }));
      for (const c of commands) assert.is(c.env.VLLM_HOST_IP, NODE_IPS[rank], `${mode} rank ${rank}: ${c.argv.join(' ')}`);
    }
  }
});

test("NCCL_IB_HCA never prefix-matches another fabric's adapters", () => {
  // NCCL reads each entry as a prefix: `mlx5_1` also takes mlx5_10…mlx5_17, which on a
  // node with two fabrics are the other fabric's rails. A leading `=` makes them exact.
  const spec = multi(1, { transport: { kind: 'fabric', fabric: 'ib-b', linkLayer: 'InfiniBand', hcas: ['mlx5_1', 'mlx5_2'] } });
  const value = launch(spec).commands[0]!.env.NCCL_IB_HCA!;
  assert.is(value, '=mlx5_1,mlx5_2');
  const exact = value.slice(1).split(',');
  const otherFabric = ['mlx5_10', 'mlx5_11', 'mlx5_20'];
  assert.not.ok(otherFabric.some((h) => exact.includes(h)));
});

test('CUDA_VISIBLE_DEVICES counts GPUs the way nvidia-smi does', () => {
  // CUDA's default order puts the fastest card first, so on a mixed node the index
  // placement chose could be another shard's GPU.
  for (const spec of [single(), multi(0), multi(1, { launchMode: 'mp' }), multi(1, { engine: 'sglang', launchMode: undefined })]) {
    for (const c of launch(spec).commands) assert.is(c.env.CUDA_DEVICE_ORDER, 'PCI_BUS_ID');
  }
});

test("vllm serve under Ray dials its own replica's head, not whichever Ray cluster started last on the node", () => {
  const a = launch(multi(0, { leader: { ip: LEADER_IP, port: 20001 } })).commands[1]!;
  const b = launch(multi(0, { replica: 'deepseek-2', httpPort: 20010, leader: { ip: LEADER_IP, port: 20011 } })).commands[1]!;
  assert.is(a.env.RAY_ADDRESS, '10.0.0.10:20001');
  assert.is(b.env.RAY_ADDRESS, '10.0.0.10:20011');
});

test('Ray processes carry the NCCL environment: vLLM workers inherit the raylet’s, not the server’s', () => {
  for (const rank of [0, 1]) {
    const ray = launch(multi(rank)).commands[0]!;
    assert.is(ray.argv[1], 'start');
    assert.is(ray.env.NCCL_IB_HCA, '=mlx5_0,mlx5_1');
    assert.is(ray.env.NCCL_SOCKET_IFNAME, '=eth0');
    assert.is(ray.env.GLOO_SOCKET_IFNAME, 'eth0');
    assert.is(ray.env.CUDA_VISIBLE_DEVICES, '0,1,2,3,4,5,6,7');
  }
});

test('every rank of a replica is given the same fabric adapters and the same rendezvous', () => {
  for (const [mode, spec] of Object.entries(MODES)) {
    const all = [0, 1, 2, 3].flatMap((r) => launch(spec(r, { ranks: 4, tp: 8, pp: 4, nodeIp: NODE_IPS[r]! })).commands);
    assert.equal(new Set(all.map((c) => c.env.NCCL_IB_HCA)), new Set(['=mlx5_0,mlx5_1']), mode);
    const waits = new Set(all.filter((c) => c.waitFor).map((c) => `${c.waitFor!.host}:${c.waitFor!.port}`));
    assert.equal(waits, new Set(['10.0.0.10:20001']), mode);
  }
});

test.run();
