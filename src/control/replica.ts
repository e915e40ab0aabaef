// A replica as the reconciler tracks it: the placement it holds in the inventory, and
// for each shard what the agent last said about it and what the control plane wants of
// it. Commands are level-triggered: `want` is the goal, and a command is (re)sent until
// the agent's reports match it, so a command lost with a broken stream is sent again.
import type { ShardState } from '../messages/agent.js';
import type { PlacedModel, PlacedProfile } from '../messages/catalog.js';
import type { ReplicaState } from '../messages/control.js';
import type { PlacedEndpoint } from '../messages/endpoints.js';
import type { ShardSpec } from '../messages/shard-spec.js';
import type { FleetGpu } from '../messages/fleet.js';
import { flagValue, pinnedBatchArgs } from './engine-batch.js';
import type { ReplicaPlacement } from './placement.js';

/** `drain`: let requests in flight finish, then stop (the router already sends it none). */
export type ShardGoal = 'run' | 'drain' | 'stop';

export interface ShardRecord {
  readonly id: string;
  readonly node: string;
  readonly rank: number;
  readonly spec: ShardSpec;
  /** What the agent last reported; `unknown` before its first report. */
  state: ShardState | 'unknown';
  reason: string | null;
  want: ShardGoal;
  /** When the command for `want` was last sent; null when not since `want` last changed. */
  sentAt: number | null;
  /** The shard's node is lost: nothing more will be heard of it, and nothing is sent. */
  gone: boolean;
}

export interface ReplicaRecord {
  readonly id: string;
  readonly model: string;
  readonly profile: string;
  /** What it holds in the inventory, re-allocated as ranks of a recovered replica report. */
  placement: ReplicaPlacement;
  /** By rank; a recovered multi-node replica has holes until every rank's node reports. */
  readonly shards: (ShardRecord | undefined)[];
  readonly ranks: number;
  state: ReplicaState;
  reason: string | null;
  since: number;
  readonly createdAt: number;
  /** Adopted from an agent's report rather than placed here. */
  readonly recovered: boolean;
  /** Where and how the router reaches it once ready. */
  readonly endpoint: PlacedEndpoint;
  /** Why it is to be retired once a replacement serves (a drained node, a scale-down); null: it stays. */
  leaving: string | null;
  /** The router version that no longer lists it: its drain is sent only once the router applied it. */
  unpublishedIn: number | null;
}

/** Replicas in these states count toward a model's desired count. */
export const ACTIVE: ReadonlySet<ReplicaState> = new Set(['pending', 'starting', 'ready']);

/** Replica ids must be shard-id safe; model names may hold `/` and `:`. */
export function replicaId(model: string, unique: string): string {
  const stem = model.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[^A-Za-z0-9]+/, '').slice(0, 96) || 'model';
  return `${stem}-${unique}`;
}

export const shardId = (replica: string, rank: number): string => `${replica}-r${rank}`;

export interface NodeFacts {
  /** The interface its management address is on; empty when the agent could not tell. */
  readonly mgmtInterface: string;
  /** Its GPUs as its agent reported them. */
  readonly gpus: readonly FleetGpu[];
}

/**
 * The shard specs of a placement, by rank. Everything the adapters need is decided here
 * (ports, rendezvous, transport, the served name), so an agent adds nothing of its own.
 */
export function shardSpecs(model: PlacedModel, profile: PlacedProfile, p: ReplicaPlacement, facts: (node: string) => NodeFacts): ShardSpec[] {
  const ranks = p.shards.length;
  const leader = p.shards[0]!;
  // A rank without an HTTP server (a headless vLLM worker) is still given rank 0's
  // port: the adapter passes --port to every `vllm serve`, and a headless one binds nothing.
  const leaderPort = leader.httpPort ?? 0;
  // The batch limits a vLLM profile leaves to vLLM, made explicit for the router (`engine-batch.ts`).
  const cards = facts(leader.node).gpus;
  const leaderCards = leader.gpus.map((g) => cards.find((c) => c.index === g.index) ?? { name: null, memoryTotalMiB: null });
  const args = [...profile.args, ...pinnedBatchArgs(p.engine, profile.args, leaderCards)];
  return p.shards.map((s): ShardSpec => {
    const base: ShardSpec = {
      replica: p.replica,
      model: model.source,
      servedName: model.name,
      engine: p.engine,
      ...(p.launchMode !== undefined && { launchMode: p.launchMode }),
      rank: s.rank,
      ranks,
      tp: profile.tp,
      pp: profile.pp,
      gpus: s.gpus,
      httpHost: s.address,
      httpPort: s.httpPort ?? leaderPort,
      ...(args.length > 0 && { extraArgs: [...args] }),
      ...(Object.keys(profile.env).length > 0 && { env: { ...profile.env } }),
    };
    if (ranks === 1) return base;
    const iface = facts(s.node).mgmtInterface;
    return {
      ...base,
      nodeIp: s.address,
      leader: { ip: leader.address, port: p.rendezvousPort ?? 0 },
      transport: p.fabric ? { kind: 'fabric', fabric: p.fabric.name, linkLayer: p.fabric.linkLayer, hcas: [...s.hcas] } : { kind: 'socket' },
      ...(iface !== '' && { mgmtInterface: iface }),
    };
  });
}

/**
 * The batch size a profile's engine args set, which the router then need not learn:
 * vLLM's `--max-num-seqs N` (or `=N`), SGLang's `--max-running-requests`.
 */
export function batchSizeOf(engine: ShardSpec['engine'], args: readonly string[]): number | null {
  const n = wholeArg(args, engine === 'sglang' ? '--max-running-requests' : '--max-num-seqs');
  return n !== null && n > 0 ? n : null;
}

/**
 * The per-step token budget a profile's engine args set, or null: unknown. vLLM's
 * `--max-num-batched-tokens`; SGLang's `--chunked-prefill-size`, where -1 turns chunking
 * off (0: no budget, every admitted prompt prefilled whole).
 */
export function stepBudgetOf(engine: ShardSpec['engine'], args: readonly string[]): number | null {
  if (engine !== 'sglang') return wholeArg(args, '--max-num-batched-tokens');
  const v = flagValue(args, '--chunked-prefill-size');
  if (v === undefined || !/^-?\d+$/.test(v)) return null;
  return Math.max(0, Number(v));
}

/**
 * How a profile's engine orders the request's `priority` field, from its args: vLLM with
 * `--scheduling-policy priority` serves lower values first; SGLang with
 * `--enable-priority-scheduling` serves higher values first unless
 * `--schedule-low-priority-values-first`. Null: the engine runs first come, first served.
 */
export function enginePriorityOf(engine: ShardSpec['engine'], args: readonly string[]): 'lower-first' | 'higher-first' | null {
  if (engine === 'sglang') {
    if (!args.includes('--enable-priority-scheduling')) return null;
    return args.includes('--schedule-low-priority-values-first') ? 'lower-first' : 'higher-first';
  }
  return flagValue(args, '--scheduling-policy') === 'priority' ? 'lower-first' : null;
}

/** The whole number an engine flag is given (`--flag N` or `--flag=N`), or null. */
function wholeArg(args: readonly string[], flag: string): number | null {
  const v = flagValue(args, flag);
  return v !== undefined && /^\d+$/.test(v) ? Number(v) : null;
}


/** The router endpoint of a replica: rank 0's HTTP server. */
export function endpointOf(model: PlacedModel, profile: PlacedProfile | undefined, spec: ShardSpec, id: string): PlacedEndpoint {
  const host = spec.httpHost && spec.httpHost !== '0.0.0.0' ? spec.httpHost : (spec.nodeIp ?? '127.0.0.1');
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${spec.httpPort}`;
  const args = spec.extraArgs ?? [];
  return { id, url, models: [model.name], weight: profile?.weight ?? 1, batchSize: batchSizeOf(spec.engine, args), stepBudget: stepBudgetOf(spec.engine, args), enginePriority: enginePriorityOf(spec.engine, args), gpus: spec.tp * spec.pp };
}
