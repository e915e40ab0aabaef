// What the control plane tells an agent to run, and what the agent turns it into.
//
// A shard is one replica's share of one node. Nothing in this folder starts a process:
// it turns a shard spec into the commands the supervisor starts, so the part where
// multi-node runs go wrong (which rank waits for which, which rank is health-checked,
// which NCCL variables pin which adapters) is pure and tested without GPUs.

import type { ShardSpec } from '../../messages/shard-spec.js';

/** A port that must accept a TCP connection before a command is started. */
export interface WaitFor {
  readonly host: string;
  readonly port: number;
  /** Past this the shard fails instead of hanging: a leader that never comes up. */
  readonly timeoutMs: number;
}

/**
 * One process of a shard. A shard is a sequence of these in start order: every command
 * but the last is a sidecar that lives and dies with the shard (a Ray head), the last
 * command's exit is the shard's exit.
 */
export interface LaunchCommand {
  readonly argv: readonly string[];
  /**
   * What the launcher sets, to lay over the agent's own environment (PATH, HOME,
   * HF_HOME, LD_LIBRARY_PATH come from there). Not the complete environment.
   */
  readonly env: Readonly<Record<string, string>>;
  /** Whether this process answers the OpenAI API; only such a process is health-checked. */
  readonly servesHttp: boolean;
  /** Rendezvous that must accept connections before this command starts. */
  readonly waitFor?: WaitFor;
}

/** Readiness: the leader answers `url` (`/v1/models`) listing `servedName`. */
export interface HealthCheck {
  readonly url: string;
  readonly servedName: string;
}

export interface Launch {
  readonly commands: readonly LaunchCommand[];
  /** Null for a rank that serves no HTTP: it is judged by staying alive. */
  readonly healthCheck: HealthCheck | null;
}

/** Where the engines are installed, and how long a worker waits for its leader. */
export interface LaunchOptions {
  /** The `vllm` executable. */
  readonly vllm: string;
  /** The interpreter of the SGLang environment (`python -m sglang.launch_server`). */
  readonly python: string;
  /** The `ray` executable (vLLM `ray` launch mode). */
  readonly ray: string;
  readonly rendezvousTimeoutMs: number;
}

export const DEFAULT_LAUNCH_OPTIONS: LaunchOptions = Object.freeze({
  vllm: 'vllm',
  python: 'python3',
  ray: 'ray',
  rendezvousTimeoutMs: 300_000, // 5 minutes: a leader loading slowly is normal, one never listening is not
});

/** Whether this rank answers the OpenAI API. Under every engine and mode, rank 0 alone. */
export function servesHttp(spec: Pick<ShardSpec, 'rank'>): boolean {
  return spec.rank === 0;
}

/** Whether the replica spans more than one node. */
export function isMultiNode(spec: Pick<ShardSpec, 'ranks'>): boolean {
  return spec.ranks > 1;
}
