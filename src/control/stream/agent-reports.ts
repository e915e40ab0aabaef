// What the control plane reads of an agent's Register: the node as placement sees it,
// and the shards it runs. The wire says more (temperatures, PCI ids, ports' LIDs);
// placement needs classes, problems, NVLink domains and fabrics.
import type { ShardStatus } from '../../messages/agent.js';
import { LinkLayer, type Register } from '../../messages/gen/llmgw/agent/v1/agent_pb.js';
import type { FleetFabric } from '../../messages/fleet.js';
import { shardStatusFromWire } from '../../messages/shard-status-wire.js';
import type { NodeReport } from '../reconciler.js';

export function reportFromRegister(reg: Register): { report: NodeReport; running: ShardStatus[] } {
  const inv = reg.inventory;
  const fabrics: FleetFabric[] = (inv?.fabrics ?? []).flatMap((f) =>
    f.linkLayer === LinkLayer.INFINIBAND || f.linkLayer === LinkLayer.ETHERNET ? [{ name: f.name, hcas: [...f.hcas], linkLayer: f.linkLayer === LinkLayer.INFINIBAND ? 'InfiniBand' : 'Ethernet' }] : [],
  );
  const report: NodeReport = {
    id: reg.nodeId,
    address: reg.mgmtIp,
    hostname: reg.hostname,
    agentVersion: reg.agentVersion,
    engineVersions: { ...reg.engineVersions },
    mgmtInterface: reg.mgmtInterface,
    gpus: (inv?.gpus ?? []).map((g) => ({
      index: g.index,
      class: g.gpuClass ?? null,
      computeCapability: g.computeCapability ?? null,
      nvlinkDomain: g.nvlinkDomain ?? null,
      problems: [...g.problems],
      name: g.name ?? null,
      memoryTotalMiB: g.memoryTotalMib ?? null,
    })),
    fabrics,
  };
  return { report, running: reg.running.map(shardStatusFromWire) };
}
