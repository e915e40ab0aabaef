// A shard's status as the agent reports it on the stream. One table per enum, typed
// over the whole union, so a state added to SHARD_STATES is a compile error here.
import { create } from '@bufbuild/protobuf';
import { ShardState as WireShardState, ShardStatusSchema, type ShardStatus as WireShardStatus } from './gen/llmgw/agent/v1/agent_pb.js';
import type { ShardState, ShardStatus } from './agent.js';
import { shardSpecFromWire, shardSpecToWire } from './shard-spec-wire.js';

export const SHARD_STATE_TO_WIRE: Readonly<Record<ShardState, WireShardState>> = {
  pending: WireShardState.PENDING,
  starting: WireShardState.STARTING,
  loading: WireShardState.LOADING,
  ready: WireShardState.READY,
  draining: WireShardState.DRAINING,
  stopped: WireShardState.STOPPED,
  failed: WireShardState.FAILED,
};

export function shardStatusToWire(status: ShardStatus): WireShardStatus {
  return create(ShardStatusSchema, {
    shardId: status.id,
    spec: status.spec ? shardSpecToWire(status.spec) : undefined,
    state: SHARD_STATE_TO_WIRE[status.state],
    sinceUnixMs: BigInt(Math.trunc(status.since)),
    reason: status.reason ?? undefined,
    logTail: [...(status.tail ?? [])],
    adopted: status.adopted,
  });
}

const SHARD_STATE_FROM_WIRE = new Map(Object.entries(SHARD_STATE_TO_WIRE).map(([k, v]) => [v, k as ShardState]));

/**
 * A status from the stream. A spec that cannot be read becomes null (the control plane
 * stops such a shard rather than guess what it holds); processes are the agent's own
 * business and do not travel.
 */
export function shardStatusFromWire(w: WireShardStatus): ShardStatus {
  let spec: ShardStatus['spec'] = null;
  try {
    spec = w.spec ? shardSpecFromWire(w.spec) : null;
  } catch {
    spec = null;
  }
  return {
    id: w.shardId,
    spec,
    // An unknown state is read as failed: whatever it is, it does not serve.
    state: SHARD_STATE_FROM_WIRE.get(w.state) ?? 'failed',
    since: Number(w.sinceUnixMs),
    reason: w.reason ?? (SHARD_STATE_FROM_WIRE.has(w.state) ? null : `the agent reported shard state ${w.state}, which this server does not know`),
    tail: w.logTail.length > 0 ? [...w.logTail] : null,
    adopted: w.adopted,
    processes: [],
  };
}
