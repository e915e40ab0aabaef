// The shard spec: what the control plane tells an agent to run. A wire contract, so it
// lives with the protocols; the agent's launch adapters turn it into commands. On the
// agent stream it travels as proto/llmgw/agent/v1's ShardSpec, converted in one place
// (shard-spec-wire.ts): a field added here is added there too.

export const ENGINE_KINDS = ['vllm', 'sglang'] as const;
export type EngineKind = (typeof ENGINE_KINDS)[number];

/**
 * How a multi-node vLLM replica is wired. `ray`: a Ray cluster (head on rank 0) and
 * `vllm serve --distributed-executor-backend ray` on rank 0 only. `mp`: vLLM's own
 * launcher (≥ 0.11), `vllm serve --nnodes --node-rank --master-addr` on every rank,
 * `--headless` on the workers. Which one works depends on the vLLM version, so it is
 * chosen per profile, never guessed.
 */
export const VLLM_LAUNCH_MODES = ['ray', 'mp'] as const;
export type VllmLaunchMode = (typeof VLLM_LAUNCH_MODES)[number];

/** One GPU of this node assigned to the shard. */
export interface ShardGpu {
  /** nvidia-smi's index; CUDA_VISIBLE_DEVICES lists these (with CUDA_DEVICE_ORDER=PCI_BUS_ID). */
  readonly index: number;
  /** `h100-80g`: the class placement matched; a tensor-parallel group never mixes classes. */
  readonly class: string;
  /** As nvidia-smi prints it (`9.0`); compared as major.minor, never as a float. */
  readonly computeCapability: string;
}

/**
 * The inter-node path of a multi-node replica. `kind` is the discriminant.
 *
 * - `fabric`: RDMA over one fabric; `hcas` are that fabric's adapters on this node and
 *   nothing else (a replica never spans two fabrics). `linkLayer` is sysfs's word:
 *   `InfiniBand`, or `Ethernet` for RoCE.
 * - `socket`: no RDMA at all, NCCL over TCP on the management network. Explicit, so
 *   that a fabric whose adapters went missing is an error rather than a silent
 *   fallback to a path a hundred times slower.
 */
export type ShardTransport =
  | {
      readonly kind: 'fabric';
      readonly fabric: string;
      readonly linkLayer: 'InfiniBand' | 'Ethernet';
      readonly hcas: readonly string[];
    }
  | { readonly kind: 'socket' };

/** The rendezvous point every rank of a multi-node replica dials: always on rank 0. */
export interface Rendezvous {
  /** Rank 0's management-network address (never a fabric address: NCCL bootstraps over TCP). */
  readonly ip: string;
  /**
   * One port per replica, chosen by the control plane: the Ray head's GCS port (`ray`),
   * vLLM's `--master-port` (`mp`), or SGLang's `--dist-init-addr` port. Not a fixed
   * 6379/29501: two replicas may both have their leader on one node.
   */
  readonly port: number;
}

export interface ShardSpec {
  readonly replica: string;
  /** Model path (or hub id) as the engine loads it. */
  readonly model: string;
  /** The name clients ask for; readiness is `/v1/models` listing it. */
  readonly servedName: string;
  readonly engine: EngineKind;
  /** Required for a multi-node vLLM shard; ignored by SGLang and by single-node shards. */
  readonly launchMode?: VllmLaunchMode;
  /** This node's rank, 0..ranks-1; rank 0 is the leader. */
  readonly rank: number;
  /** Number of nodes (ranks) of the replica. */
  readonly ranks: number;
  readonly tp: number;
  readonly pp: number;
  /** This node's GPUs for the shard: exactly tp × pp / ranks of them. */
  readonly gpus: readonly ShardGpu[];
  /** This node's management IP. Required multi-node: Ray's and vLLM's per-node identity. */
  readonly nodeIp?: string;
  /** Required multi-node; ignored single-node. */
  readonly leader?: Rendezvous;
  /** Address the OpenAI server binds; default 0.0.0.0. */
  readonly httpHost?: string;
  readonly httpPort: number;
  /** Required multi-node; ignored single-node (nothing leaves the node). */
  readonly transport?: ShardTransport;
  /** Management interface (`eth0`) that NCCL and Gloo bootstrap over. Required multi-node. */
  readonly mgmtInterface?: string;
  /** `--dtype`, e.g. `bfloat16`. */
  readonly dtype?: string;
  /** `--quantization`, e.g. `fp8`; any fp8 scheme is refused below compute capability 8.9. */
  readonly quantization?: string;
  /** Passed to the engine last. May not set what the spec sets (see validate.ts). */
  readonly extraArgs?: readonly string[];
  /** Laid over the generated environment. May not set what the spec sets (see validate.ts). */
  readonly env?: Readonly<Record<string, string>>;
}
