import { fromBinary, toBinary } from '@bufbuild/protobuf';
import * as assert from 'uvu/assert';
import { discoverInventory, type Inventory } from '../../../src/agent/discovery/inventory.js';
import { registerMessage } from '../../../src/agent/stream/register-message.js';
import { SHARD_STATES, type ShardStatus } from '../../../src/messages/agent.js';
import { AgentMessageSchema, LinkLayer, ShardState, type Register } from '../../../src/messages/gen/llmgw/agent/v1/agent_pb.js';
import { shardSpecFromWire } from '../../../src/messages/shard-spec-wire.js';
import { CASES, ibRootOf, smiOf } from '../discovery/fixtures.js';
import { suite } from '../../support/uvu.js';

// The Register is built from a real discovery of the captured hardware fixtures and
// read back from its bytes: every fact of the inventory arrives, and what discovery
// did not know arrives unset rather than as a zero.

const FABRICS = { 'ib-a': ['mlx5_0', 'mlx5_1', 'mlx5_2', 'mlx5_3'] };

function sent(inventory: Inventory, running: ShardStatus[] = []): Register {
  const msg = registerMessage({ nodeId: 'node-a', hostname: 'gpu-a', mgmtIp: '10.0.0.11', agentVersion: '0.1.0', inventory, engineVersions: { vllm: '0.11.0' }, running, labels: { rack: 'r7' } });
  const back = fromBinary(AgentMessageSchema, toBinary(AgentMessageSchema, msg));
  assert.is(back.body.case, 'register');
  return back.body.value as Register;
}

const un = <T>(v: T | undefined): T | null => (v === undefined ? null : v);

const test = suite('agent stream: the Register message');

test('every GPU, adapter, port, NVLink domain and fabric of each fixture arrives as discovered', async () => {
  for (const c of CASES) {
    const inv = await discoverInventory({ nvidiaSmi: smiOf(c), ibRoot: ibRootOf(c), noGpu: false, ...(c === 'h100-8x' && { fabrics: FABRICS }) });
    const r = sent(inv);
    assert.equal([r.nodeId, r.hostname, r.mgmtIp, r.agentVersion, r.engineVersions, r.labels], ['node-a', 'gpu-a', '10.0.0.11', '0.1.0', { vllm: '0.11.0' }, { rack: 'r7' }], c);
    const w = r.inventory!;
    assert.equal(
      w.gpus.map((g) => ({
        index: g.index,
        uuid: un(g.uuid),
        name: un(g.name),
        class: un(g.gpuClass),
        memoryTotalMiB: un(g.memoryTotalMib),
        memoryUsedMiB: un(g.memoryUsedMib),
        computeCapability: un(g.computeCapability),
        pciBusId: un(g.pciBusId),
        driverVersion: un(g.driverVersion),
        temperatureC: un(g.temperatureC),
        eccUncorrected: un(g.eccUncorrected),
        nvlinkDomain: un(g.nvlinkDomain),
        numaNode: un(g.numaNode),
        problems: g.problems,
      })),
      inv.gpus,
      `${c}: GPUs`,
    );
    const layer = (l: LinkLayer): string => ({ [LinkLayer.INFINIBAND]: 'InfiniBand', [LinkLayer.ETHERNET]: 'Ethernet', [LinkLayer.UNSPECIFIED]: 'Unknown' })[l];
    assert.equal(
      w.hcas.map((h) => ({
        name: h.name,
        numaNode: un(h.numaNode),
        fabric: un(h.fabric),
        ports: h.ports.map((p) => ({ port: p.number, state: un(p.state), physState: un(p.physState), rateGbps: un(p.rateGbps), linkLayer: layer(p.linkLayer), lid: un(p.lid) })),
      })),
      inv.hcas,
      `${c}: adapters`,
    );
    assert.equal(w.nvlinkDomains.map((d) => ({ id: d.id, gpus: d.gpus, minLinks: d.minLinks })), inv.nvlinkDomains, `${c}: NVLink domains`);
    assert.equal(w.fabrics.map((f) => ({ name: f.name, hcas: f.hcas, linkLayer: layer(f.linkLayer), rateGbps: un(f.rateGbps) })), inv.fabrics, `${c}: fabrics`);
    assert.equal(w.warnings, inv.warnings, `${c}: warnings`);
  }
});

test('the fixtures exercise what matters: problems, fabrics and unknown fields all travel', async () => {
  const h100 = sent(await discoverInventory({ nvidiaSmi: smiOf('h100-8x'), ibRoot: ibRootOf('h100-8x'), noGpu: false, fabrics: FABRICS })).inventory!;
  assert.equal(h100.fabrics.map((f) => [f.name, f.hcas.length, f.linkLayer]), [['ib-a', 4, LinkLayer.INFINIBAND]]);
  assert.equal(h100.gpus[0]!.gpuClass, 'h100-80g');
  const ecc = sent(await discoverInventory({ nvidiaSmi: smiOf('ecc-fault'), ibRoot: ibRootOf('ecc-fault'), noGpu: false })).inventory!;
  assert.ok(ecc.gpus.some((g) => g.problems.length > 0), 'a faulty card carries its problems');
  const na = sent(await discoverInventory({ nvidiaSmi: smiOf('na-fields'), ibRoot: ibRootOf('na-fields'), noGpu: false })).inventory!;
  assert.ok(na.gpus.some((g) => g.temperatureC === undefined || g.eccUncorrected === undefined), 'an [N/A] field is unset, not 0');
});

test('every running shard arrives with its state, reason, log tail and spec', async () => {
  const inv = await discoverInventory({ nvidiaSmi: smiOf('l40s-4x'), ibRoot: ibRootOf('l40s-4x'), noGpu: false });
  const spec = { replica: 'q-r0', model: 'Qwen/Qwen2.5-7B', servedName: 'q', engine: 'vllm', rank: 0, ranks: 1, tp: 1, pp: 1, gpus: [{ index: 0, class: 'l40s-48g', computeCapability: '8.9' }], httpPort: 8000 } as const;
  const running: ShardStatus[] = SHARD_STATES.map((state, i) => ({
    id: `s${i}`,
    spec: i === 0 ? null : spec,
    state,
    since: 1_764_000_000_000 + i,
    reason: state === 'failed' ? 'exited with code 1' : null,
    tail: state === 'failed' ? ['CUDA out of memory', 'Traceback …'] : null,
    adopted: i === 2,
    processes: [],
  }));
  const r = sent(inv, running);
  assert.equal(
    r.running.map((s) => [s.shardId, ShardState[s.state]!.toLowerCase(), Number(s.sinceUnixMs), un(s.reason), s.logTail, s.adopted]),
    running.map((s) => [s.id, s.state, s.since, s.reason, s.tail ?? [], s.adopted]),
  );
  assert.is(r.running[0]!.spec, undefined, 'a leftover without a spec has none on the wire');
  assert.equal(shardSpecFromWire(r.running[1]!.spec!), spec);
});

test.run();
