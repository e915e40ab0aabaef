// Randomised replicas: every rank of each is built, and the invariants that make a
// multi-node replica able to start are checked across all of them together. The seed is
// printed with every failure; LLMGW_SPEC_SEED=<n> replays one.
import { test } from '../../support/uvu.js';
import * as assert from 'uvu/assert';
import { buildLaunch, validateShard, type Launch, type LaunchCommand, type ShardGpu, type ShardSpec, type ShardTransport } from '../../../src/agent/engines/index.js';
import { OPTS, flagValue } from './fixtures.js';
import { mulberry32 } from '../../support/rng.js';

const REPLICAS = 400;
const BASE_SEED = Number(process.env.LLMGW_SPEC_SEED ?? 0x11a6);

/** mulberry32: small, seedable, good enough to pick shapes. */
function rng(seed: number): { int(lo: number, hi: number): number; pick<T>(xs: readonly T[]): T; chance(p: number): boolean; shuffle<T>(xs: T[]): T[] } {
  const next = mulberry32(seed);
  const int = (lo: number, hi: number): number => lo + Math.floor(next() * (hi - lo + 1));
  return {
    int,
    pick: (xs) => xs[int(0, xs.length - 1)]!,
    chance: (p) => next() < p,
    shuffle: (xs) => {
      for (let i = xs.length - 1; i > 0; i--) {
        const j = int(0, i);
        [xs[i], xs[j]] = [xs[j]!, xs[i]!];
      }
      return xs;
    },
  };
}

const CLASSES = [
  { class: 'h100-80g', cc: '9.0', fp8: true },
  { class: 'h200-141g', cc: '9.0', fp8: true },
  { class: 'a100-80g', cc: '8.0', fp8: false },
  { class: 'l40s-45g', cc: '8.9', fp8: true },
  { class: 'a10-22g', cc: '8.6', fp8: false },
  { class: 'b200-179g', cc: '10.0', fp8: true },
] as const;

/** Every rank's spec of one random, valid replica. */
function randomReplica(seed: number): ShardSpec[] {
  const r = rng(seed);
  const engine = r.pick(['vllm', 'sglang'] as const);
  const ranks = r.chance(0.25) ? 1 : r.int(2, 4);
  const perNode = r.pick([1, 2, 4, 8]);
  const total = ranks * perNode;
  const pp = r.pick([1, 2, 4].filter((p) => total % p === 0));
  const tp = total / pp;
  const gpuClass = r.pick(CLASSES);
  const hcaCount = r.int(1, 8);
  const hcas = r.shuffle(Array.from({ length: 18 }, (_, i) => `mlx5_${i}`)).slice(0, hcaCount);
  const transport: ShardTransport = r.chance(0.2)
    ? { kind: 'socket' }
    : { kind: 'fabric', fabric: r.pick(['ib-a', 'ib-b', 'roce-a']), linkLayer: r.chance(0.3) ? 'Ethernet' : 'InfiniBand', hcas };
  const httpPort = r.int(10_000, 29_999) * 2;
  const ips = r.shuffle(Array.from({ length: 200 }, (_, i) => `10.${r.int(0, 255)}.${r.int(0, 255)}.${i + 1}`)).slice(0, ranks);
  const shared = {
    replica: `m-${seed}`,
    model: `/models/m-${seed}`,
    servedName: `model-${seed}`,
    engine,
    ...(engine === 'vllm' ? { launchMode: r.pick(['ray', 'mp'] as const) } : {}),
    ranks,
    tp,
    pp,
    httpPort,
    ...(r.chance(0.3) ? { httpHost: '0.0.0.0' } : {}),
    ...(gpuClass.fp8 && r.chance(0.4) ? { quantization: 'fp8' } : {}),
    ...(r.chance(0.3) ? { dtype: 'bfloat16' } : {}),
    ...(r.chance(0.4) ? { extraArgs: ['--max-model-len', String(r.pick([4096, 8192, 32768]))] } : {}),
    ...(r.chance(0.3) ? { env: { NCCL_DEBUG: 'WARN' } } : {}),
  };
  const multi = ranks > 1
    ? { leader: { ip: ips[0]!, port: httpPort + 1 }, transport, mgmtInterface: r.pick(['eth0', 'bond0', 'ens1f0']) }
    : {};
  return Array.from({ length: ranks }, (_, rank) => {
    const gpus: ShardGpu[] = r
      .shuffle(Array.from({ length: 8 }, (_, i) => i))
      .slice(0, perNode)
      .map((index) => ({ index, class: gpuClass.class, computeCapability: gpuClass.cc }));
    return { ...shared, ...multi, rank, gpus, ...(ranks > 1 ? { nodeIp: ips[rank]! } : {}) };
  });
}

/** The rendezvous addresses a command opens, read from its argv alone (an oracle independent of waitFor). */
function opens(c: LaunchCommand): string[] {
  const argv = c.argv;
  if (argv.includes('--head')) return [`${flagValue(argv, '--node-ip-address')}:${flagValue(argv, '--port')}`];
  if (flagValue(argv, '--node-rank') !== '0') return [];
  const master = flagValue(argv, '--master-addr');
  if (master !== undefined) return [`${master}:${flagValue(argv, '--master-port')}`];
  const dist = flagValue(argv, '--dist-init-addr');
  return dist !== undefined ? [dist] : [];
}

const key = (w: { host: string; port: number }): string => `${w.host}:${w.port}`;

test(`${REPLICAS} random replicas: exactly one command serves HTTP, rank 0's last; workers wait for what rank 0 opens`, () => {
  for (let i = 0; i < REPLICAS; i++) {
    const seed = BASE_SEED + i;
    const specs = randomReplica(seed);
    const at = `seed ${seed} (${specs[0]!.engine}${specs[0]!.launchMode ? ` ${specs[0]!.launchMode}` : ''}, ${specs.length} nodes)`;
    for (const s of specs) assert.equal(validateShard(s), [], `${at} rank ${s.rank}`);
    const launches: Launch[] = specs.map((s) => buildLaunch(s, OPTS));

    // Exactly one HTTP server in the replica, and it is the shard itself on rank 0.
    const serving = launches.flatMap((l, rank) => l.commands.map((c, j) => ({ rank, j, c })).filter((x) => x.c.servesHttp));
    assert.is(serving.length, 1, `${at}: ${serving.length} commands serve HTTP`);
    assert.is(serving[0]!.rank, 0, at);
    assert.is(serving[0]!.j, launches[0]!.commands.length - 1, `${at}: rank 0's server is not its last command`);

    // Only that rank is health-checked, at the port its server binds, for the served name.
    launches.forEach((l, rank) => assert.is(l.healthCheck === null, rank !== 0, `${at} rank ${rank}`));
    const hc = launches[0]!.healthCheck!;
    assert.is(hc.url, `http://127.0.0.1:${flagValue(serving[0]!.c.argv, '--port')}/v1/models`, at);
    assert.is(hc.servedName, specs[0]!.servedName, at);

    // Rank 0 waits only for what its own earlier commands opened; never for a worker.
    const leaderCmds = launches[0]!.commands;
    leaderCmds.forEach((c, j) => {
      if (c.waitFor === undefined) return;
      const before = leaderCmds.slice(0, j).flatMap(opens);
      assert.ok(before.includes(key(c.waitFor)), `${at}: rank 0 command ${j} waits for ${key(c.waitFor)}, which rank 0 has not opened`);
    });
    assert.is(leaderCmds[0]!.waitFor, undefined, `${at}: rank 0's first command waits`);

    // Every worker command waits for an address rank 0 opens.
    const leaderOpens = leaderCmds.flatMap(opens);
    if (specs.length > 1) assert.is(leaderOpens.length, 1, `${at}: rank 0 opens ${leaderOpens.length} rendezvous`);
    for (const [rank, l] of launches.entries()) {
      if (rank === 0) continue;
      for (const c of l.commands) {
        assert.ok(c.waitFor, `${at} rank ${rank}: ${c.argv.join(' ')} starts without waiting for rank 0`);
        assert.ok(leaderOpens.includes(key(c.waitFor!)), `${at} rank ${rank} waits for ${key(c.waitFor!)}; rank 0 opens ${leaderOpens.join(', ')}`);
      }
    }
  }
});

test(`${REPLICAS} random replicas: every command's environment pins its GPUs, its fabric and its own node`, () => {
  for (let i = 0; i < REPLICAS; i++) {
    const seed = BASE_SEED + i;
    for (const s of randomReplica(seed)) {
      const at = `seed ${seed} rank ${s.rank}`;
      for (const c of buildLaunch(s, OPTS).commands) {
        assert.is(c.env.CUDA_VISIBLE_DEVICES, s.gpus.map((g) => g.index).join(','), at);
        const t = s.ranks > 1 ? s.transport! : undefined;
        if (t?.kind === 'fabric') {
          assert.is(c.env.NCCL_IB_HCA, `=${t.hcas.join(',')}`, at);
          assert.is(c.env.NCCL_IB_DISABLE, '0', at);
          assert.is(c.env.NCCL_IB_GID_INDEX, t.linkLayer === 'Ethernet' ? '3' : undefined, at);
        } else {
          assert.not.ok('NCCL_IB_HCA' in c.env, `${at}: NCCL_IB_HCA set without a fabric`);
          assert.is(c.env.NCCL_IB_DISABLE, '1', at);
        }
        if (s.ranks > 1) {
          assert.is(c.env.NCCL_SOCKET_IFNAME, `=${s.mgmtInterface}`, at);
          assert.is(c.env.GLOO_SOCKET_IFNAME, s.mgmtInterface, at);
        }
        assert.is(c.env.VLLM_HOST_IP, s.engine === 'vllm' && s.ranks > 1 ? s.nodeIp : undefined, at);
      }
    }
  }
});

test(`${REPLICAS} random replicas: a mixed GPU class, a missing HCA list or FP8 on old cards is always refused`, () => {
  let multiFabric = 0;
  for (let i = 0; i < REPLICAS; i++) {
    const seed = BASE_SEED + i;
    const r = rng(seed ^ 0x5eed);
    for (const s of randomReplica(seed)) {
      const at = `seed ${seed} rank ${s.rank}`;
      if (s.gpus.length > 1) {
        const other = CLASSES.find((c) => c.class !== s.gpus[0]!.class)!;
        const odd = r.int(1, s.gpus.length - 1);
        const gpus = s.gpus.map((g, j) => (j === odd ? { ...g, class: other.class } : g));
        assert.ok(validateShard({ ...s, gpus }).some((p) => p.startsWith('a tensor-parallel group may not mix GPU classes')), at);
      }
      if (s.ranks > 1 && s.transport?.kind === 'fabric') {
        multiFabric++;
        assert.ok(validateShard({ ...s, transport: { ...s.transport, hcas: [] } }).some((p) => p.includes('lists no HCAs')), at);
      }
      const old = r.pick(CLASSES.filter((c) => !c.fp8));
      const gpus = s.gpus.map((g) => ({ ...g, class: old.class, computeCapability: old.cc }));
      assert.ok(validateShard({ ...s, gpus, quantization: 'fp8' }).some((p) => p.startsWith("quantization 'fp8' needs compute capability 8.9")), at);
    }
  }
  assert.ok(multiFabric > 100, `only ${multiFabric} multi-node fabric shards were generated`);
});

test('the generator covers every engine, launch mode, transport and node count', () => {
  const seen = new Set<string>();
  for (let i = 0; i < REPLICAS; i++) {
    const [s] = randomReplica(BASE_SEED + i);
    seen.add(`${s!.engine}/${s!.launchMode ?? '-'}/${s!.ranks > 1 ? (s!.transport?.kind === 'fabric' ? s!.transport.linkLayer : 'socket') : 'single'}`);
  }
  for (const engine of ['vllm/ray', 'vllm/mp', 'sglang/-']) {
    for (const t of ['InfiniBand', 'Ethernet', 'socket', 'single']) assert.ok(seen.has(`${engine}/${t}`), `never generated ${engine}/${t}`);
  }
});

test.run();
