// The Register an agent opens every stream with: who it is, its whole inventory and
// every shard it runs. Nothing is left for a later call: a control plane that just
// restarted rebuilds this node, and the replicas on it, from this message alone.
import { create } from '@bufbuild/protobuf';
import type { Inventory } from '../discovery/inventory.js';
import type { LinkLayer as DiscoveredLinkLayer } from '../discovery/infiniband.js';
import type { ShardStatus } from '../../messages/agent.js';
import { AgentMessageSchema, InventorySchema, LinkLayer, type AgentMessage, type Inventory as WireInventory } from '../../messages/gen/llmgw/agent/v1/agent_pb.js';
import { shardStatusToWire } from '../../messages/shard-status-wire.js';

export interface RegisterInput {
  readonly nodeId: string;
  readonly hostname: string;
  readonly mgmtIp: string;
  /** The interface mgmtIp is on; '' when not known. */
  readonly mgmtInterface?: string;
  readonly agentVersion: string;
  readonly inventory: Inventory;
  /** Engine → version found on this node (`vllm` → `0.11.0`). */
  readonly engineVersions: Readonly<Record<string, string>>;
  readonly running: readonly ShardStatus[];
  readonly labels?: Readonly<Record<string, string>>;
}

export function registerMessage(input: RegisterInput): AgentMessage {
  return create(AgentMessageSchema, {
    body: {
      case: 'register',
      value: {
        nodeId: input.nodeId,
        hostname: input.hostname,
        mgmtIp: input.mgmtIp,
        mgmtInterface: input.mgmtInterface ?? '',
        agentVersion: input.agentVersion,
        inventory: inventoryToWire(input.inventory),
        engineVersions: { ...input.engineVersions },
        running: input.running.map(shardStatusToWire),
        labels: { ...input.labels },
      },
    },
  });
}

const LINK_LAYER: Readonly<Record<DiscoveredLinkLayer, LinkLayer>> = { InfiniBand: LinkLayer.INFINIBAND, Ethernet: LinkLayer.ETHERNET, Unknown: LinkLayer.UNSPECIFIED };

/** Null (not known) becomes an unset field, never a zero a reader would take for a value. */
const opt = <T>(v: T | null): T | undefined => (v === null ? undefined : v);

export function inventoryToWire(inv: Inventory): WireInventory {
  return create(InventorySchema, {
    gpus: inv.gpus.map((g) => ({
      index: g.index,
      uuid: opt(g.uuid),
      name: opt(g.name),
      gpuClass: opt(g.class),
      memoryTotalMib: opt(g.memoryTotalMiB),
      memoryUsedMib: opt(g.memoryUsedMiB),
      computeCapability: opt(g.computeCapability),
      pciBusId: opt(g.pciBusId),
      driverVersion: opt(g.driverVersion),
      temperatureC: opt(g.temperatureC),
      eccUncorrected: opt(g.eccUncorrected),
      nvlinkDomain: opt(g.nvlinkDomain),
      numaNode: opt(g.numaNode),
      problems: [...g.problems],
    })),
    hcas: inv.hcas.map((h) => ({
      name: h.name,
      numaNode: opt(h.numaNode),
      fabric: opt(h.fabric),
      ports: h.ports.map((p) => ({ number: p.port, state: opt(p.state), physState: opt(p.physState), rateGbps: opt(p.rateGbps), linkLayer: LINK_LAYER[p.linkLayer], lid: opt(p.lid) })),
    })),
    nvlinkDomains: inv.nvlinkDomains.map((d) => ({ id: d.id, gpus: [...d.gpus], minLinks: d.minLinks })),
    fabrics: inv.fabrics.map((f) => ({ name: f.name, hcas: [...f.hcas], linkLayer: LINK_LAYER[f.linkLayer], rateGbps: opt(f.rateGbps) })),
    warnings: [...inv.warnings],
  });
}
