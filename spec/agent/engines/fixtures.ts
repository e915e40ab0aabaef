// Shard specs to build the cases from. GPU classes and compute capabilities are the ones
// nvidia-smi reports for these cards.
import type { LaunchOptions, ShardGpu, ShardSpec } from '../../../src/agent/engines/index.js';

export const h100 = (index: number): ShardGpu => ({ index, class: 'h100-80g', computeCapability: '9.0' });
export const a100 = (index: number): ShardGpu => ({ index, class: 'a100-80g', computeCapability: '8.0' });
export const l40s = (index: number): ShardGpu => ({ index, class: 'l40s-45g', computeCapability: '8.9' });

export const range = (from: number, n: number): number[] => Array.from({ length: n }, (_, i) => from + i);

export const OPTS: LaunchOptions = {
  vllm: '/opt/vllm/bin/vllm',
  python: '/opt/sglang/bin/python',
  ray: '/opt/vllm/bin/ray',
  rendezvousTimeoutMs: 120_000,
};

/** One node, TP 4 on GPUs 0-3 of an H100 box. */
export function single(over: Partial<ShardSpec> = {}): ShardSpec {
  return {
    replica: 'llama-70b-1',
    model: '/models/llama-3.3-70b',
    servedName: 'llama-3.3-70b',
    engine: 'vllm',
    rank: 0,
    ranks: 1,
    tp: 4,
    pp: 1,
    gpus: range(0, 4).map(h100),
    httpPort: 20000,
    ...over,
  };
}

export const LEADER_IP = '10.0.0.10';
export const NODE_IPS = ['10.0.0.10', '10.0.0.11', '10.0.0.12', '10.0.0.13'];

/** Two nodes of 8 H100s, TP 8 × PP 2, over the InfiniBand fabric ib-a (mlx5_0, mlx5_1). */
export function multi(rank: number, over: Partial<ShardSpec> = {}): ShardSpec {
  return {
    replica: 'deepseek-1',
    model: '/models/deepseek-v3',
    servedName: 'deepseek-v3',
    engine: 'vllm',
    launchMode: 'ray',
    rank,
    ranks: 2,
    tp: 8,
    pp: 2,
    gpus: range(0, 8).map(h100),
    nodeIp: NODE_IPS[rank]!,
    leader: { ip: LEADER_IP, port: 20001 },
    httpPort: 20000,
    transport: { kind: 'fabric', fabric: 'ib-a', linkLayer: 'InfiniBand', hcas: ['mlx5_0', 'mlx5_1'] },
    mgmtInterface: 'eth0',
    ...over,
  };
}

/** The environment every rank of multi() gets from the shared rules. */
export function fabricEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    CUDA_DEVICE_ORDER: 'PCI_BUS_ID',
    CUDA_VISIBLE_DEVICES: '0,1,2,3,4,5,6,7',
    NCCL_IB_DISABLE: '0',
    NCCL_IB_HCA: '=mlx5_0,mlx5_1',
    NCCL_SOCKET_IFNAME: '=eth0',
    GLOO_SOCKET_IFNAME: 'eth0',
    ...extra,
  };
}

/** The value after `flag` in argv, or of `flag=value`; undefined when absent. */
export function flagValue(argv: readonly string[], flag: string): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === flag) return argv[i + 1];
    if (argv[i]!.startsWith(`${flag}=`)) return argv[i]!.slice(flag.length + 1);
  }
  return undefined;
}
