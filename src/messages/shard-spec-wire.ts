// The one crossing between the shard spec the launch adapters read (shard-spec.ts) and
// its protobuf form on the agent stream. Field for field: the spec beside this file
// fails when either side gains a field the other lacks. An empty list or map on the
// wire means the field is absent; enums at 0 (UNSPECIFIED) mean absent where the field
// is optional and are refused where it is required.
import { create } from '@bufbuild/protobuf';
import { LlmgwError } from '../errors.js';
import {
  Engine,
  LaunchMode,
  LinkLayer,
  ShardSpecSchema,
  ShardTransportSchema,
  type ShardSpec as WireShardSpec,
  type ShardTransport as WireShardTransport,
} from './gen/llmgw/agent/v1/agent_pb.js';
import type { EngineKind, ShardSpec, ShardTransport, VllmLaunchMode } from './shard-spec.js';

const ENGINE_TO_WIRE: Record<EngineKind, Engine> = { vllm: Engine.VLLM, sglang: Engine.SGLANG };
const LAUNCH_MODE_TO_WIRE: Record<VllmLaunchMode, LaunchMode> = { ray: LaunchMode.RAY, mp: LaunchMode.MP };
const LINK_LAYER_TO_WIRE: Record<'InfiniBand' | 'Ethernet', LinkLayer> = { InfiniBand: LinkLayer.INFINIBAND, Ethernet: LinkLayer.ETHERNET };

const invert = <K extends string, V extends number>(m: Record<K, V>): Map<V, K> => new Map(Object.entries(m).map(([k, v]) => [v as V, k as K]));
const ENGINE_FROM_WIRE = invert(ENGINE_TO_WIRE);
const LAUNCH_MODE_FROM_WIRE = invert(LAUNCH_MODE_TO_WIRE);
const LINK_LAYER_FROM_WIRE = invert(LINK_LAYER_TO_WIRE);

export function shardSpecToWire(spec: ShardSpec): WireShardSpec {
  return create(ShardSpecSchema, {
    replica: spec.replica,
    model: spec.model,
    servedName: spec.servedName,
    engine: ENGINE_TO_WIRE[spec.engine],
    launchMode: spec.launchMode ? LAUNCH_MODE_TO_WIRE[spec.launchMode] : LaunchMode.UNSPECIFIED,
    rank: spec.rank,
    ranks: spec.ranks,
    tp: spec.tp,
    pp: spec.pp,
    gpus: spec.gpus.map((g) => ({ index: g.index, gpuClass: g.class, computeCapability: g.computeCapability })),
    nodeIp: spec.nodeIp,
    leader: spec.leader ? { ip: spec.leader.ip, port: spec.leader.port } : undefined,
    httpHost: spec.httpHost,
    httpPort: spec.httpPort,
    transport: spec.transport ? transportToWire(spec.transport) : undefined,
    mgmtInterface: spec.mgmtInterface,
    dtype: spec.dtype,
    quantization: spec.quantization,
    extraArgs: [...(spec.extraArgs ?? [])],
    env: { ...spec.env },
  });
}

function transportToWire(t: ShardTransport): WireShardTransport {
  return create(ShardTransportSchema, {
    kind: t.kind === 'socket' ? { case: 'socket', value: {} } : { case: 'fabric', value: { fabric: t.fabric, linkLayer: LINK_LAYER_TO_WIRE[t.linkLayer], hcas: [...t.hcas] } },
  });
}

/**
 * The launchable form of a spec from the stream. Throws LLMGW_SHARD_INVALID, naming the
 * field, where the wire holds what the type cannot (an unset engine, a transport of no
 * kind); what the values mean is validateShard's to judge.
 */
export function shardSpecFromWire(w: WireShardSpec): ShardSpec {
  const bad = (field: string, why: string): LlmgwError => new LlmgwError('LLMGW_SHARD_INVALID', `shard spec ${field}: ${why}`, { field });
  const engine = ENGINE_FROM_WIRE.get(w.engine);
  if (!engine) throw bad('engine', `must be vllm or sglang, got enum value ${w.engine}`);
  const launchMode = LAUNCH_MODE_FROM_WIRE.get(w.launchMode);
  if (!launchMode && w.launchMode !== LaunchMode.UNSPECIFIED) throw bad('launch_mode', `must be ray or mp, got enum value ${w.launchMode}`);

  let transport: ShardTransport | undefined;
  if (w.transport) {
    const k = w.transport.kind;
    if (k.case === 'socket') transport = { kind: 'socket' };
    else if (k.case === 'fabric') {
      const linkLayer = LINK_LAYER_FROM_WIRE.get(k.value.linkLayer);
      if (!linkLayer) throw bad('transport.fabric.link_layer', `must be InfiniBand or Ethernet, got enum value ${k.value.linkLayer}`);
      transport = { kind: 'fabric', fabric: k.value.fabric, linkLayer, hcas: [...k.value.hcas] };
    } else throw bad('transport', 'is set but names neither fabric nor socket');
  }

  // Absent fields stay absent (no key holding undefined), so a spec read back equals the one sent.
  return {
    replica: w.replica,
    model: w.model,
    servedName: w.servedName,
    engine,
    ...(launchMode && { launchMode }),
    rank: w.rank,
    ranks: w.ranks,
    tp: w.tp,
    pp: w.pp,
    gpus: w.gpus.map((g) => ({ index: g.index, class: g.gpuClass, computeCapability: g.computeCapability })),
    ...(w.nodeIp !== undefined && { nodeIp: w.nodeIp }),
    ...(w.leader && { leader: { ip: w.leader.ip, port: w.leader.port } }),
    ...(w.httpHost !== undefined && { httpHost: w.httpHost }),
    httpPort: w.httpPort,
    ...(transport && { transport }),
    ...(w.mgmtInterface !== undefined && { mgmtInterface: w.mgmtInterface }),
    ...(w.dtype !== undefined && { dtype: w.dtype }),
    ...(w.quantization !== undefined && { quantization: w.quantization }),
    ...(w.extraArgs.length > 0 && { extraArgs: [...w.extraArgs] }),
    ...(Object.keys(w.env).length > 0 && { env: { ...w.env } }),
  };
}
