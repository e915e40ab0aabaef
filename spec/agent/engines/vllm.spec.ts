import { test } from '../../support/uvu.js';
import * as assert from 'uvu/assert';
import { buildLaunch, vllmCommands, type LaunchCommand } from '../../../src/agent/engines/index.js';
import { DEFAULT_LAUNCH_OPTIONS } from '../../../src/agent/engines/shard-spec.js';
import { OPTS, fabricEnv, h100, l40s, multi, single } from './fixtures.js';

const commands = (spec: Parameters<typeof buildLaunch>[0]): readonly LaunchCommand[] => buildLaunch(spec, OPTS).commands;

test('single node: one vllm serve that serves HTTP, GPUs pinned, IB off', () => {
  assert.equal(commands(single()), [
    {
      argv: [
        '/opt/vllm/bin/vllm', 'serve', '/models/llama-3.3-70b',
        '--served-model-name', 'llama-3.3-70b',
        '--host', '0.0.0.0',
        '--port', '20000',
        '--tensor-parallel-size', '4',
      ],
      env: { CUDA_DEVICE_ORDER: 'PCI_BUS_ID', CUDA_VISIBLE_DEVICES: '0,1,2,3', NCCL_IB_DISABLE: '1' },
      servesHttp: true,
    },
  ]);
});

test('single node: pp, dtype, quantization, host, then extra args last; env overrides laid over', () => {
  const spec = single({
    tp: 2,
    pp: 2,
    gpus: [4, 5, 6, 7].map(h100),
    httpHost: '10.0.0.5',
    httpPort: 8000,
    dtype: 'bfloat16',
    quantization: 'fp8',
    extraArgs: ['--max-model-len', '32768', '--enable-prefix-caching'],
    env: { NCCL_DEBUG: 'INFO', HF_HOME: '/srv/hf' },
  });
  assert.equal(commands(spec), [
    {
      argv: [
        '/opt/vllm/bin/vllm', 'serve', '/models/llama-3.3-70b',
        '--served-model-name', 'llama-3.3-70b',
        '--host', '10.0.0.5',
        '--port', '8000',
        '--tensor-parallel-size', '2',
        '--pipeline-parallel-size', '2',
        '--dtype', 'bfloat16',
        '--quantization', 'fp8',
        '--max-model-len', '32768', '--enable-prefix-caching',
      ],
      env: {
        CUDA_DEVICE_ORDER: 'PCI_BUS_ID',
        CUDA_VISIBLE_DEVICES: '4,5,6,7',
        NCCL_IB_DISABLE: '1',
        NCCL_DEBUG: 'INFO',
        HF_HOME: '/srv/hf',
      },
      servesHttp: true,
    },
  ]);
});

test('single node: a fabric, management interface and launch mode in the spec change nothing', () => {
  const plain = commands(single());
  const decorated = commands(
    single({
      launchMode: 'ray',
      transport: { kind: 'fabric', fabric: 'ib-a', linkLayer: 'InfiniBand', hcas: ['mlx5_0'] },
      mgmtInterface: 'eth0',
      nodeIp: '10.0.0.5',
    }),
  );
  assert.equal(decorated, plain);
  assert.not.ok('NCCL_IB_HCA' in plain[0]!.env);
  assert.not.ok('VLLM_HOST_IP' in plain[0]!.env);
});

test('ray, rank 0: the Ray head as a sidecar, then vllm serve against it, waiting for the head', () => {
  assert.equal(commands(multi(0)), [
    {
      argv: ['/opt/vllm/bin/ray', 'start', '--block', '--head', '--node-ip-address=10.0.0.10', '--port=20001', '--num-gpus=8'],
      env: fabricEnv({ VLLM_HOST_IP: '10.0.0.10' }),
      servesHttp: false,
    },
    {
      argv: [
        '/opt/vllm/bin/vllm', 'serve', '/models/deepseek-v3',
        '--served-model-name', 'deepseek-v3',
        '--host', '0.0.0.0',
        '--port', '20000',
        '--tensor-parallel-size', '8',
        '--pipeline-parallel-size', '2',
        '--distributed-executor-backend', 'ray',
      ],
      env: fabricEnv({ VLLM_HOST_IP: '10.0.0.10', RAY_ADDRESS: '10.0.0.10:20001' }),
      servesHttp: true,
      waitFor: { host: '10.0.0.10', port: 20001, timeoutMs: 120_000 },
    },
  ]);
});

test('ray, rank 1: only the Ray join, waiting for the head, its own node IP', () => {
  assert.equal(commands(multi(1)), [
    {
      argv: ['/opt/vllm/bin/ray', 'start', '--block', '--address=10.0.0.10:20001', '--node-ip-address=10.0.0.11', '--num-gpus=8'],
      env: fabricEnv({ VLLM_HOST_IP: '10.0.0.11' }),
      servesHttp: false,
      waitFor: { host: '10.0.0.10', port: 20001, timeoutMs: 120_000 },
    },
  ]);
});

test('ray: extra args and dtype go to vllm serve, never to ray start', () => {
  const [head, serve] = commands(multi(0, { extraArgs: ['--max-num-seqs', '64'], dtype: 'bfloat16' }));
  assert.equal(head!.argv, ['/opt/vllm/bin/ray', 'start', '--block', '--head', '--node-ip-address=10.0.0.10', '--port=20001', '--num-gpus=8']);
  assert.equal(serve!.argv.slice(-4), ['--dtype', 'bfloat16', '--max-num-seqs', '64']);
  const [join] = commands(multi(1, { extraArgs: ['--max-num-seqs', '64'] }));
  assert.equal(join!.argv, ['/opt/vllm/bin/ray', 'start', '--block', '--address=10.0.0.10:20001', '--node-ip-address=10.0.0.11', '--num-gpus=8']);
});

test('mp, rank 0: vllm serve with nnodes, node-rank 0, master address; serves HTTP, waits for no one', () => {
  assert.equal(commands(multi(0, { launchMode: 'mp' })), [
    {
      argv: [
        '/opt/vllm/bin/vllm', 'serve', '/models/deepseek-v3',
        '--served-model-name', 'deepseek-v3',
        '--host', '0.0.0.0',
        '--port', '20000',
        '--tensor-parallel-size', '8',
        '--pipeline-parallel-size', '2',
        '--distributed-executor-backend', 'mp',
        '--nnodes', '2',
        '--node-rank', '0',
        '--master-addr', '10.0.0.10',
        '--master-port', '20001',
      ],
      env: fabricEnv({ VLLM_HOST_IP: '10.0.0.10' }),
      servesHttp: true,
    },
  ]);
});

test('mp, rank 1: the same command, node-rank 1 and headless, waiting for the master port', () => {
  assert.equal(commands(multi(1, { launchMode: 'mp', extraArgs: ['--max-model-len', '8192'] })), [
    {
      argv: [
        '/opt/vllm/bin/vllm', 'serve', '/models/deepseek-v3',
        '--served-model-name', 'deepseek-v3',
        '--host', '0.0.0.0',
        '--port', '20000',
        '--tensor-parallel-size', '8',
        '--pipeline-parallel-size', '2',
        '--distributed-executor-backend', 'mp',
        '--nnodes', '2',
        '--node-rank', '1',
        '--master-addr', '10.0.0.10',
        '--master-port', '20001',
        '--headless',
        '--max-model-len', '8192',
      ],
      env: fabricEnv({ VLLM_HOST_IP: '10.0.0.11' }),
      servesHttp: false,
      waitFor: { host: '10.0.0.10', port: 20001, timeoutMs: 120_000 },
    },
  ]);
});

test('RoCE: the fabric HCAs plus NCCL_IB_GID_INDEX=3, which spec.env may change', () => {
  const roce = { kind: 'fabric', fabric: 'roce-a', linkLayer: 'Ethernet', hcas: ['mlx5_2', 'mlx5_3'] } as const;
  const [join] = commands(multi(1, { transport: roce }));
  assert.equal(join!.env, {
    ...fabricEnv({ VLLM_HOST_IP: '10.0.0.11' }),
    NCCL_IB_HCA: '=mlx5_2,mlx5_3',
    NCCL_IB_GID_INDEX: '3',
  });
  const [tuned] = commands(multi(1, { transport: roce, env: { NCCL_IB_GID_INDEX: '5' } }));
  assert.is(tuned!.env.NCCL_IB_GID_INDEX, '5');
});

test('HCAs with a port number pass through as NCCL writes them', () => {
  const [join] = commands(multi(1, { transport: { kind: 'fabric', fabric: 'ib-a', linkLayer: 'InfiniBand', hcas: ['mlx5_0:1', 'mlx5_1:1'] } }));
  assert.is(join!.env.NCCL_IB_HCA, '=mlx5_0:1,mlx5_1:1');
});

test('socket transport: IB disabled, no NCCL_IB_HCA, bootstrap still pinned to the management interface', () => {
  const [join] = commands(multi(1, { transport: { kind: 'socket' }, mgmtInterface: 'bond0' }));
  assert.equal(join!.env, {
    CUDA_DEVICE_ORDER: 'PCI_BUS_ID',
    CUDA_VISIBLE_DEVICES: '0,1,2,3,4,5,6,7',
    NCCL_IB_DISABLE: '1',
    NCCL_SOCKET_IFNAME: '=bond0',
    GLOO_SOCKET_IFNAME: 'bond0',
    VLLM_HOST_IP: '10.0.0.11',
  });
});

test('CUDA_VISIBLE_DEVICES keeps the assigned order, on a node shared with other shards', () => {
  const [serve] = commands(single({ tp: 2, gpus: [6, 2].map(l40s) }));
  assert.is(serve!.env.CUDA_VISIBLE_DEVICES, '6,2');
});

test('default binaries are looked up on PATH', () => {
  const [serve] = buildLaunch(single()).commands;
  assert.is(serve!.argv[0], 'vllm');
  const [head] = buildLaunch(multi(0)).commands;
  assert.is(head!.argv[0], 'ray');
  assert.equal(buildLaunch(multi(1)).commands[0]!.waitFor, { host: '10.0.0.10', port: 20001, timeoutMs: DEFAULT_LAUNCH_OPTIONS.rendezvousTimeoutMs });
  assert.is(DEFAULT_LAUNCH_OPTIONS.rendezvousTimeoutMs, 300_000);
  assert.is(buildLaunch(single(), { vllm: undefined, ray: '/x/ray' }).commands[0]!.argv[0], 'vllm');
});

test('vllmCommands refuses a multi-node spec without a launch mode rather than guessing one', () => {
  const spec = multi(0, { launchMode: undefined });
  assert.throws(() => vllmCommands(spec, OPTS), (err: Error) => /launch mode 'undefined' is not ray or mp/.test(err.message));
});

test.run();
