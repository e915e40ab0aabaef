// A shard's status as the agent reports it on the stream. One table per enum, typed
// over the whole union, so a state added to SHARD_STATES is a compile error here.
import { create } from '@bufbuild/protobuf';
import { ShardState as WireShardState, ShardStatusSchema, type ShardStatus as WireShardStatus } from './gen/llmgw/agent/v1/agent_pb.js';
import type { ShardState, ShardStatus } from './agent.js';
import { shardSpecToWire } from './shard-spec-wire.js';

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
