// The control plane's view of a node: what an agent reports when it registers. A wire
// contract, so it lives with the protocols. The agent's discovery inventory is a
// superset of these shapes, so it can be sent as it is.

/** One GPU as the control plane places on it. */
export interface FleetGpu {
  /** nvidia-smi's index on its node. */
  readonly index: number;
  /** `h100-80g`; null when the agent could not classify it (then `problems` says so). */
  readonly class: string | null;
  /** As nvidia-smi prints it (`9.0`); null when not reported. */
  readonly computeCapability: string | null;
  /** Id of the NVLink domain on this node; null with no NVLink peer, or topology unknown. */
  readonly nvlinkDomain: number | null;
  /** Empty when the card may take an engine: ECC faults, foreign memory, a lost card otherwise. */
  readonly problems: readonly string[];
  /** As nvidia-smi prints it (`NVIDIA H100 80GB HBM3`); null or absent when not reported. */
  readonly name?: string | null;
  /** Its memory as nvidia-smi reports it; null or absent when not reported. */
  readonly memoryTotalMiB?: number | null;
}

/** A fabric the node takes part in, with the adapters that reach it. */
export interface FleetFabric {
  /** Operator-assigned: OpenSM's default subnet prefix is the same on every fabric. */
  readonly name: string;
  /** Adapters with an ACTIVE port on this fabric: exactly what NCCL_IB_HCA may list. */
  readonly hcas: readonly string[];
  readonly linkLayer: 'InfiniBand' | 'Ethernet';
}

export interface NodeRegistration {
  readonly id: string;
  /** Management-network address: what engines bind and rendezvous over (never a fabric address). */
  readonly address: string;
  readonly gpus: readonly FleetGpu[];
  /** Empty on a node without RDMA: it can host single-node replicas only. */
  readonly fabrics: readonly FleetFabric[];
}
