// The environment every engine process of a shard shares. This is where multi-node runs
// go wrong without failing: one missing or too-broad NCCL variable turns a working
// tensor-parallel group into one that hangs on its first all-reduce.
import type { ShardSpec } from '../../messages/shard-spec.js';

/**
 * Variables the launcher derives from the spec. `spec.env` may not set them (validate.ts):
 * an override would silently undo placement — another shard's GPUs, another fabric's
 * adapters, another node's identity. Value: the spec field that owns the variable.
 */
export const RESERVED_ENV: Readonly<Record<string, string>> = Object.freeze({
  CUDA_VISIBLE_DEVICES: 'gpus',
  CUDA_DEVICE_ORDER: 'gpus',
  NCCL_IB_HCA: 'transport',
  NCCL_IB_DISABLE: 'transport',
  NCCL_SOCKET_IFNAME: 'mgmtInterface',
  GLOO_SOCKET_IFNAME: 'mgmtInterface',
  VLLM_HOST_IP: 'nodeIp',
  RAY_ADDRESS: 'leader',
});

/** The GID index of the routable RoCE v2 address (fe80 link-local sits at 0 and 1). */
export const ROCE_GID_INDEX = '3';

/**
 * - `CUDA_VISIBLE_DEVICES` lists the shard's nvidia-smi indices, and `CUDA_DEVICE_ORDER=PCI_BUS_ID`
 *   makes CUDA number devices the way nvidia-smi does (CUDA's default puts the fastest
 *   card first, so on a mixed node index 0 could be another shard's GPU).
 * - Multi-node over a fabric: `NCCL_IB_HCA==mlx5_0,mlx5_1`. The leading `=` asks NCCL
 *   for exact names; without it each entry is a prefix, and `mlx5_1` also takes
 *   `mlx5_10`… — adapters of another fabric, where the peer is unreachable.
 *   `NCCL_IB_DISABLE=0` overrides a `1` inherited from the unit file. RoCE (link layer
 *   Ethernet) adds `NCCL_IB_GID_INDEX=3`, the routable v2 GID, overridable via `spec.env`.
 * - Single node, or multi-node over sockets: `NCCL_IB_DISABLE=1` and no `NCCL_IB_HCA`.
 *   Nothing crosses a fabric, and NCCL stops probing for one.
 * - Multi-node: `NCCL_SOCKET_IFNAME==<mgmt>` (exact, same reason) and
 *   `GLOO_SOCKET_IFNAME=<mgmt>` (Gloo takes a name, not a prefix): bootstrap stays on
 *   the management network instead of an IPoIB address that cannot route between fabrics.
 *
 * `spec.env` is laid over the result by the caller, after engine-specific variables.
 */
export function sharedEnv(spec: ShardSpec): Record<string, string> {
  const env: Record<string, string> = {
    CUDA_DEVICE_ORDER: 'PCI_BUS_ID',
    CUDA_VISIBLE_DEVICES: spec.gpus.map((g) => g.index).join(','),
  };
  const transport = spec.ranks > 1 ? spec.transport : undefined;
  if (transport?.kind === 'fabric') {
    env.NCCL_IB_DISABLE = '0';
    env.NCCL_IB_HCA = `=${transport.hcas.join(',')}`;
    if (transport.linkLayer === 'Ethernet') env.NCCL_IB_GID_INDEX = ROCE_GID_INDEX;
  } else {
    env.NCCL_IB_DISABLE = '1';
  }
  if (spec.ranks > 1 && spec.mgmtInterface) {
    env.NCCL_SOCKET_IFNAME = `=${spec.mgmtInterface}`;
    env.GLOO_SOCKET_IFNAME = spec.mgmtInterface;
  }
  return env;
}

/** The operator's overrides win over everything not reserved (validate.ts refuses the rest). */
export function withOverrides(spec: ShardSpec, env: Record<string, string>): Record<string, string> {
  return { ...env, ...(spec.env ?? {}) };
}
