import type { ShardSpec } from './shard-spec.js';
import { LlmgwError, type SerializedError } from '../errors.js';
import { address, type Address, type Ask } from '../runtime/protocol.js';

/**
 * Where a shard is in its life. `loading` is apart from `starting` because loading a 70B
 * model legitimately takes minutes, and an operator needs to see that this is normal.
 * `stopped` and `failed` are terminal.
 */
export const SHARD_STATES = ['pending', 'starting', 'loading', 'ready', 'draining', 'stopped', 'failed'] as const;
export type ShardState = (typeof SHARD_STATES)[number];

/** One process of a shard: every command but the last is a sidecar, the last is the engine. */
export interface ShardProcessStatus {
  readonly role: 'sidecar' | 'engine';
  readonly argv0: string;
  readonly pid: number;
  readonly pgid: number;
}

export interface ShardStatus {
  readonly id: string;
  /** Null only for a leftover whose state file could not be read. */
  readonly spec: ShardSpec | null;
  readonly state: ShardState;
  /** Wall-clock ms of the last transition. */
  readonly since: number;
  /** Why it failed, or what it is waiting for (`not ready yet: … does not list …`). */
  readonly reason: string | null;
  /** The last lines of the shard's output; set when it failed. */
  readonly tail: readonly string[] | null;
  /** Taken over from a previous agent: watched by polling, not waited on. */
  readonly adopted: boolean;
  readonly processes: readonly ShardProcessStatus[];
}

/** A transition, as the control-plane stream will report it. */
export interface ShardEvent {
  readonly id: string;
  readonly replica: string | null;
  readonly rank: number | null;
  readonly from: ShardState;
  readonly state: ShardState;
  readonly at: number;
  readonly reason: string | null;
  readonly tail: readonly string[] | null;
}

export interface StartShardReply {
  /** False when the same spec was already running under this id (a retried command). */
  readonly created: boolean;
  readonly status: ShardStatus;
}

/**
 * A request the supervisor may refuse (an invalid spec, a conflict, an unknown id). A
 * refusal is an answer, not a failure: a handler that threw would crash the actor,
 * and a restart of the one actor holding the node's engines is not a way to say no.
 * `ok` is the discriminant.
 */
export type Outcome<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: SerializedError };

/** The value of an accepted outcome; a refusal thrown as its LlmgwError (for a caller that answers with it). */
export function valueOf<T>(outcome: Outcome<T>): T {
  if (!outcome.ok) throw LlmgwError.deserialize(outcome.error);
  return outcome.value;
}

/**
 * Protocol of the process supervisor (worker thread `agent`): the one actor that holds
 * the node's engine processes. `start` and `stop` answer at once with the status they
 * set off; every later transition goes to the subscribers as a `shard-event`.
 */
export type SupervisorMsg =
  | ({ type: 'start'; id: string; spec: ShardSpec } & Ask<Outcome<StartShardReply>>)
  | ({ type: 'stop'; id: string } & Ask<Outcome<ShardStatus>>)
  | ({ type: 'list' } & Ask<ShardStatus[]>)
  /** The last `lines` lines of a shard's output, oldest first (0: the configured output_lines). */
  | ({ type: 'output'; id: string; lines: number } & Ask<Outcome<string[]>>)
  | { type: 'subscribe'; subscriber: Address<ShardEventSinkMsg> };

/** What a subscriber of the supervisor receives. */
export type ShardEventSinkMsg = { type: 'shard-event'; event: ShardEvent };

export const SUPERVISOR = address<SupervisorMsg>('supervisor');

/**
 * Protocol of the fleet link (worker thread `agent`): the node's stream to the control
 * plane. It takes the supervisor's shard events and reports them upstream.
 */
export type FleetLinkMsg = ShardEventSinkMsg;

export const FLEET_LINK = address<FleetLinkMsg>('fleet-link');
