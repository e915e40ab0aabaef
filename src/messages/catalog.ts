// The catalog as the control plane places from it: the models of llmgw.yaml that have
// profiles, validated and fully defaulted at load. Plain data: it crosses to the
// control thread at start and on every reload.
import type { EngineKind, VllmLaunchMode } from './shard-spec.js';

export interface PlacedProfile {
  readonly name: string;
  readonly engine: EngineKind;
  readonly gpu_class: string;
  readonly tp: number;
  readonly pp: number;
  /** Nodes one replica spans. */
  readonly nodes: number;
  /** tp × pp / nodes: checked at load to divide evenly. */
  readonly gpus_per_node: number;
  /** Required for a multi-node vLLM profile. */
  readonly launch_mode?: VllmLaunchMode;
  /** Extra engine arguments, passed last (`--max-num-seqs 128`). */
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  /** Higher first; ties keep catalog order. */
  readonly priority: number;
  /** The router's weight for replicas of this profile. */
  readonly weight: number;
  /** How long a replica may take from placement to ready before it is failed and rebuilt. */
  readonly startup_timeout_ms: number;
}

export interface PlacedModel {
  /** The name clients ask for (and the served name the engine is started with). */
  readonly name: string;
  /** What the engine loads: a path or a hub id. */
  readonly source: string;
  readonly scaling: { readonly min: number; readonly max: number };
  /** By priority, highest first: placement takes the first that fits. */
  readonly profiles: readonly PlacedProfile[];
}
