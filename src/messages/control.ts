// Protocol of the control plane (worker thread `control`) as the admin port and `llmgw
// ctl` see it, and the views it answers with. Views are plain data: they cross threads
// and go out as JSON (`ctl … --json`), so field names are the wire's.
import type { Outcome, ShardState } from './agent.js';
import type { PlacedModel } from './catalog.js';
import { address, type Ask } from '../runtime/protocol.js';

/** `draining`: cordoned, and its replicas are being moved off (replacement first). */
export type FleetNodeState = 'ready' | 'cordoned' | 'draining' | 'unreachable' | 'lost';

export interface GpuView {
  readonly index: number;
  readonly class: string | null;
  /** True when a shard holds it. */
  readonly allocated: boolean;
  /** The replica holding it, or null. */
  readonly replica: string | null;
  /** Why placement skips it; empty when healthy. */
  readonly problems: readonly string[];
}

export interface NodeView {
  readonly name: string;
  readonly state: FleetNodeState;
  readonly address: string;
  /** Wall-clock ms of the last message from its agent; null before any. */
  readonly last_heartbeat_ms: number | null;
  /** Whether the agent's stream is open now. */
  readonly connected: boolean;
  readonly agent_version: string;
  readonly engine_versions: Readonly<Record<string, string>>;
  readonly gpus: readonly GpuView[];
  readonly fabrics: readonly { readonly name: string; readonly hcas: readonly string[]; readonly link_layer: string }[];
  /** Replica ids with a shard here. */
  readonly replicas: readonly string[];
}

/**
 * `pending`: placed, commands not yet acknowledged. `starting`: shards launching or
 * loading. `ready`: serving, published to the router. `draining`: the router sends it
 * nothing new; its requests in flight finish, then it stops. `stopping`: shards told to
 * stop. `failed`: a shard failed or its node was lost; being torn down.
 */
export type ReplicaState = 'pending' | 'starting' | 'ready' | 'draining' | 'stopping' | 'failed';

export interface ShardView {
  readonly id: string;
  readonly node: string;
  readonly rank: number;
  readonly gpus: readonly number[];
  /** HTTP port; null for a rank that serves none. */
  readonly port: number | null;
  /** As the agent last reported it; `unknown` before its first report. */
  readonly state: ShardState | 'unknown';
  readonly reason: string | null;
}

export interface ReplicaView {
  readonly id: string;
  readonly model: string;
  readonly profile: string;
  readonly state: ReplicaState;
  /** Why it is in this state (a failure, what a drain waits for). */
  readonly reason: string | null;
  /** Wall-clock ms of the last state change. */
  readonly since: number;
  /** Where the router sends its requests (rank 0's HTTP server). */
  readonly url: string | null;
  /** Adopted from an agent's report rather than placed by this control plane. */
  readonly recovered: boolean;
  readonly shards: readonly ShardView[];
}

export interface ModelView {
  readonly name: string;
  readonly min: number;
  readonly max: number;
  /** Replicas the control plane keeps running now. */
  readonly desired: number;
  readonly ready: number;
  /** Every replica it holds, in any state. */
  readonly replicas: number;
  /** Why fewer are ready than desired; null when none are missing. */
  readonly reason: string | null;
  /** When the next placement after a failure may happen, ms from now; null without a backoff. */
  readonly retry_in_ms: number | null;
}

export interface PlacementCandidate {
  /** Null when the candidate is the profile itself or a whole fabric. */
  readonly node: string | null;
  readonly fabric: string | null;
  readonly profile: string;
  /** Stable, for tools (see control/placement.ts RejectionCode). */
  readonly code: string;
  readonly reason: string;
}

export interface PlacementExplanation {
  readonly model: string;
  /** Whether a replica could be placed now. */
  readonly placed: boolean;
  /** Where it would go, when it can. */
  readonly placement: { readonly profile: string; readonly nodes: readonly string[] } | null;
  readonly candidates: readonly PlacementCandidate[];
}

export interface ShardLogs {
  readonly shard: string;
  readonly node: string;
  readonly lines: readonly string[];
  /** Set when the output could not be read (node unreachable, unknown shard). */
  readonly error: string | null;
}

export type ControlMsg =
  | ({ type: 'nodes' } & Ask<NodeView[]>)
  | ({ type: 'models' } & Ask<ModelView[]>)
  | ({ type: 'replicas'; model?: string } & Ask<ReplicaView[]>)
  | ({ type: 'explain'; model: string } & Ask<Outcome<PlacementExplanation>>)
  | ({ type: 'cordon'; node: string } & Ask<Outcome<NodeView>>)
  | ({ type: 'uncordon'; node: string } & Ask<Outcome<NodeView>>)
  /** Cordons the node and moves its replicas off, each once its replacement serves. */
  | ({ type: 'drain'; node: string } & Ask<Outcome<NodeView>>)
  /** `target` is a replica id (every shard of it) or a shard id. */
  | ({ type: 'logs'; target: string; lines: number } & Ask<Outcome<ShardLogs[]>>)
  /** A reloaded config's placed models: scaling and profiles change in place; a model gone is drained, then stopped. */
  | ({ type: 'catalog'; models: PlacedModel[] } & Ask<{ added: string[]; removed: string[]; changed: string[] }>)
  /** The agent stream's URL as bound (`http://127.0.0.1:40123`): with port 0 in `listen`, how a caller learns the port. */
  | ({ type: 'address' } & Ask<string>)
  | { type: 'tick' }
  /** The router applied endpoint set `version` (internal: the answer to a publication). */
  | { type: 'router-applied'; version: number };

export const CONTROL = address<ControlMsg>('control');
