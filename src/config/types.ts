// The validated, fully-defaulted configuration. Property names are the file's own
// (snake_case), so there is one vocabulary from llmgw.yaml to the code. Every object
// is frozen. Keep this in step with schema.ts (spec/config/load.spec.ts checks the
// keys of a loaded config against the schema).

import type { VllmLaunchMode } from '../messages/shard-spec.js';
import type { ENGINE_KINDS, LOG_LEVELS, UNIT_KINDS } from './schema.js';

export type LogLevel = (typeof LOG_LEVELS)[number];
export type EngineKind = (typeof ENGINE_KINDS)[number];

export interface RuntimeConfig {
  readonly ask_timeout_ms: number;
  readonly shutdown_timeout_ms: number;
}

export interface RouterConfig {
  readonly max_body_bytes: number;
  readonly connect_timeout_ms: number;
  readonly first_token_timeout_ms: number;
  readonly idle_timeout_ms: number;
  readonly poll_interval_ms: number;
  readonly load_refresh_ms: number;
  readonly stale_after_ms: number;
  readonly default_profile: string;
  readonly profiles: readonly RoutingProfileConfig[];
  readonly retries: { readonly max_attempts: number; readonly budget_percent: number; readonly min_retry_concurrency: number };
  readonly cooldown: { readonly failures: number; readonly ms: number };
  readonly breaker: { readonly failures: number; readonly open_ms: number; readonly max_open_ms: number };
  readonly prefix: PrefixConfig;
  readonly admission: AdmissionConfig;
}

export interface BandConfig {
  readonly name: string;
  readonly queue_limit: number;
  readonly queue_timeout_ms: number;
}

export interface AdmissionConfig {
  readonly enabled: boolean;
  readonly bands: readonly BandConfig[];
  readonly default_band?: string;
  readonly priority_header: boolean;
  readonly target_waiting_per_replica: number;
  readonly reserved_share: number;
  readonly kv_ceiling: number;
  readonly stale_inflight_per_replica: number;
  readonly max_queued: number;
  readonly aging_ms: number;
  readonly prefill_tokens_per_replica: number;
  readonly prefill_ms_per_replica: number;
  readonly recall: boolean;
}

export interface PrefixConfig {
  readonly block_chars: number;
  readonly max_blocks: number;
  readonly index_entries: number;
  readonly offload_bytes: number;
}

export const SCORER_NAMES = ['queue', 'kv', 'inflight', 'prefix', 'session', 'weight'] as const;
export type ScorerName = (typeof SCORER_NAMES)[number];

export interface RoutingProfileConfig {
  readonly name: string;
  readonly scorers: Readonly<Record<ScorerName, number>>;
  readonly band?: string;
}

export interface ProfileConfig {
  readonly name: string;
  readonly engine: EngineKind;
  readonly gpu_class: string;
  readonly tp: number;
  readonly pp: number;
  readonly nodes: number;
  /** Filled at load: tp × pp / nodes when unset, and checked to multiply back to tp × pp. */
  readonly gpus_per_node: number;
  /** Set for every multi-node vLLM profile, never for SGLang (checked at load). */
  readonly launch_mode?: VllmLaunchMode;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly priority: number;
  readonly weight: number;
  readonly startup_timeout_ms: number;
}

export interface ScalingConfig {
  readonly min: number;
  readonly max: number;
}

export interface ModelConfig {
  readonly name: string;
  readonly aliases: readonly string[];
  readonly fallbacks: readonly string[];
  readonly routing_profile?: string;
  readonly max_model_len?: number;
  readonly stream_from_engine: boolean;
  /** Filled at load: the model name when unset. */
  readonly source: string;
  /** Filled at load: min 1 with profiles, else 0; max = max(min, 1). */
  readonly scaling: ScalingConfig;
  readonly profiles: readonly ProfileConfig[];
  readonly units: UnitsConfig;
}

/** How a model's requests are priced in budget units (`tenancy/units.ts`). */
export type UnitsConfig = (typeof UNIT_KINDS)[number] | { readonly per_million: { readonly prompt: number; readonly completion: number; readonly cached: number } };

export interface TenancyConfig {
  /** Absolute: resolved from the config file's folder at load. */
  readonly store: string;
  readonly hard_budgets: boolean;
  /** A catalog model name or alias (checked at load). */
  readonly budget_fallback?: string;
  readonly retention_days: number;
}

export interface EndpointConfig {
  readonly id: string;
  readonly url: string;
  readonly models: readonly string[];
  readonly pool?: string;
  readonly weight: number;
  readonly priority: number;
  readonly gpus: number;
  readonly max_num_seqs?: number;
  readonly max_num_batched_tokens?: number;
  readonly priority_scheduling?: 'lower-first' | 'higher-first';
}

export interface SimulateConfig {
  readonly model: string;
  readonly replicas: number;
  readonly speed: number;
  readonly flavor: EngineKind;
  readonly seed: number;
  readonly max_num_seqs?: number;
  readonly num_gpu_blocks?: number;
}

export interface SimulateNodeConfig {
  readonly name: string;
  readonly gpus: number;
}

export interface AgentTlsConfig {
  readonly ca: string;
  readonly cert: string;
  readonly key: string;
}

export interface ControlConfig {
  readonly interval_ms: number;
  readonly unreachable_after_ms: number;
  readonly lost_after_ms: number;
  /** Inclusive, lo ≤ hi (checked at load). */
  readonly port_range: readonly [number, number];
  readonly drain_grace_ms: number;
  readonly settle_ms: number;
}

export interface Config {
  readonly listen: string;
  readonly admin_listen: string;
  readonly agent_listen: string;
  /** Exclusive with agent_insecure; one of them is set whenever a model has profiles. */
  readonly agent_tls?: AgentTlsConfig;
  readonly agent_insecure: boolean;
  readonly control: ControlConfig;
  readonly admin_token?: string;
  readonly state_dir: string;
  readonly log_level: LogLevel;
  readonly access_log: boolean;
  readonly runtime: RuntimeConfig;
  readonly router: RouterConfig;
  readonly tenancy?: TenancyConfig;
  readonly models: readonly ModelConfig[];
  readonly endpoints: readonly EndpointConfig[];
  readonly simulate: readonly SimulateConfig[];
  readonly simulate_nodes: readonly SimulateNodeConfig[];
}

/** Values the caller sets from CLI flags; they win over the file and the environment. */
export interface ConfigOverrides {
  listen?: string | undefined;
  admin_listen?: string | undefined;
}

/** One thing wrong with a configuration. `format()` in problems.ts renders it as a line. */
export interface ConfigProblem {
  /** Where the value came from: the file as named by the caller, `env LLMGW_X`, or `--listen`. */
  readonly source: string;
  /** Path inside the source, e.g. `models[2].profiles[0].tp`; empty for the whole source. */
  readonly path: string;
  readonly message: string;
  /** 1-based position in the YAML file, where the problem can be located there. */
  readonly line?: number;
  readonly column?: number;
}
