// Randomised clusters: on every placement produced, the rules that no table of cases
// covers completely. Each cluster comes from a seed, printed on failure so it replays.
import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { Inventory } from '../../src/control/inventory.js';
import { placeReplica, type PlacementProfile, type ReplicaPlacement } from '../../src/control/placement.js';
import type { FleetFabric, FleetGpu, NodeRegistration } from '../../src/messages/fleet.js';
import { CC, rng } from './cluster.js';

const CLUSTERS = 400;
const CLASSES = ['h100-80g', 'a100-40g', 'l40s-45g'];
const FABRICS = ['ib-a', 'ib-b', 'ib-c'];
const RANGE = [30000, 30040] as const;

function cluster(seed: number): { inv: Inventory; regs: Map<string, NodeRegistration>; profiles: () => PlacementProfile[] } {
  const r = rng(seed);
  const inv = new Inventory();
  const regs = new Map<string, NodeRegistration>();
  const count = 1 + r.int(8);
  for (let n = 0; n < count; n++) {
    const id = `n${n}`;
    const cls = r.pick(CLASSES);
    const size = 1 + r.int(8);
    const domain = r.pick([0, 2, 4, 8]);
    const gpus: FleetGpu[] = [];
    for (let g = 0; g < size; g++) {
      // Now and then a card of another class in the node: placement must not borrow it.
      const c = r.chance(0.1) ? r.pick(CLASSES) : cls;
      const problems = r.chance(0.1) ? ['3 uncorrected ECC errors'] : [];
      gpus.push({ index: g, class: r.chance(0.02) ? null : c, computeCapability: CC[c]!, nvlinkDomain: domain > 0 ? Math.floor(g / domain) : null, problems });
    }
    const fabrics: FleetFabric[] = [];
    for (const f of FABRICS) {
      if (!r.chance(0.4)) continue;
      const hcas = r.chance(0.1) ? [] : [`mlx5_${fabrics.length * 2}`, `mlx5_${fabrics.length * 2 + 1}`];
      fabrics.push({ name: f, hcas, linkLayer: 'InfiniBand' });
    }
    const reg = { id, address: `10.0.0.${n + 1}`, gpus, fabrics };
    regs.set(id, reg);
    inv.register(reg);
    const state = r.int(12);
    if (state === 0) inv.cordon(id);
    else if (state === 1) inv.unreachable(id);
    else if (state === 2) inv.lost(id);
  }
  const profiles = (): PlacementProfile[] =>
    Array.from({ length: 1 + r.int(3) }, (_, k) => {
      const nodes = r.pick([1, 1, 2, 3]);
      const engine = r.pick(['vllm', 'sglang'] as const);
      return { name: `p${k}`, engine, gpu_class: r.pick(CLASSES), tp: r.pick([1, 2, 4, 8]), pp: r.pick([1, 1, 2]), nodes, launch_mode: r.pick(['ray', 'mp'] as const) };
    });
  return { inv, regs, profiles };
}

/** Checks one placement against the registrations and what earlier placements hold. */
function check(p: ReplicaPlacement, prof: PlacementProfile, regs: Map<string, NodeRegistration>, inv: Inventory, usedGpus: Set<string>, usedPorts: Set<string>): void {
  assert.is(p.shards.length, prof.nodes, 'one shard per node of the profile');
  assert.is(new Set(p.shards.map((s) => s.node)).size, p.shards.length, 'two shards on one node');
  assert.equal(p.shards.map((s) => s.rank), p.shards.map((_, i) => i), 'ranks in order');
  if (prof.nodes > 1) assert.ok(p.fabric, 'a multi-node replica without a fabric');
  else assert.is(p.fabric, null, 'a single-node replica with a fabric');
  for (const s of p.shards) {
    const reg = regs.get(s.node)!;
    assert.is(inv.node(s.node)!.state, 'ready', `placed on a ${inv.node(s.node)!.state} node`);
    assert.is(s.gpus.length, (prof.tp * prof.pp) / prof.nodes, 'GPUs per shard');
    for (const g of s.gpus) {
      const real = reg.gpus.find((x) => x.index === g.index);
      assert.ok(real, `GPU ${g.index} is not on ${s.node}`);
      assert.is(real!.class, prof.gpu_class, `GPU ${g.index} on ${s.node} is ${real!.class}, the profile wants ${prof.gpu_class}`);
      assert.is(g.class, p.gpuClass, 'class mixed inside the replica');
      assert.equal(real!.problems, [], `GPU ${g.index} on ${s.node} has a problem`);
      const key = `${s.node}/${g.index}`;
      assert.not.ok(usedGpus.has(key), `GPU ${key} allocated twice`);
      usedGpus.add(key);
    }
    if (p.fabric) {
      const f = reg.fabrics.find((x) => x.name === p.fabric!.name);
      assert.ok(f, `${s.node} is not on fabric ${p.fabric.name}`);
      assert.equal(s.hcas, f!.hcas, `${s.node} got HCAs ${s.hcas.join(',')}, fabric ${p.fabric.name} has ${f!.hcas.join(',')}`);
      assert.ok(s.hcas.length > 0, `${s.node} got no HCAs`);
    } else assert.equal(s.hcas, []);
    assert.is(new Set(s.ports).size, s.ports.length, 'a port twice in one shard');
    for (const port of s.ports) {
      const key = `${s.node}:${port}`;
      assert.not.ok(usedPorts.has(key), `port ${key} handed out twice`);
      usedPorts.add(key);
      assert.ok((port >= RANGE[0] && port <= RANGE[1]) || port === 8265 || port === 10001, `port ${port} outside the range`);
    }
    if (s.httpPort !== null) assert.ok(s.ports.includes(s.httpPort), 'HTTP port not held');
  }
  if (p.rendezvousPort !== null) assert.ok(p.shards[0]!.ports.includes(p.rendezvousPort), 'rendezvous port not held by rank 0');
}

test(`on every placement in ${CLUSTERS} random clusters: one fabric and its HCAs, one class, healthy free GPUs, no port twice`, () => {
  let placements = 0;
  let multi = 0;
  for (let seed = 1; seed <= CLUSTERS; seed++) {
    const { inv, regs, profiles } = cluster(seed);
    const usedGpus = new Set<string>();
    const usedPorts = new Set<string>();
    try {
      for (let k = 0; k < 8; k++) {
        const ps = profiles();
        const res = placeReplica(inv.nodes(), { model: `m${k % 3}`, replica: `r${k}`, profiles: ps, portRange: RANGE });
        if (!res.placement) {
          assert.ok(res.rejections.length > 0 || inv.nodes().length === 0, 'nothing placed and nothing explained');
          continue;
        }
        const prof = ps.find((x) => x.name === res.placement!.profile)!;
        check(res.placement, prof, regs, inv, usedGpus, usedPorts);
        inv.allocate(res.placement);
        placements++;
        if (prof.nodes > 1) multi++;
        // Now and then a replica fails whole and frees everything it held.
        if (k % 3 === 2) {
          const gone = `r${k - 1}`;
          for (const n of inv.nodes()) for (const a of inv.allocations(n.id)) if (a.replica === gone) {
            for (const g of a.gpus) usedGpus.delete(`${n.id}/${g}`);
            for (const port of a.ports) usedPorts.delete(`${n.id}:${port}`);
          }
          inv.release(gone);
        }
      }
    } catch (err) {
      throw new Error(`seed ${seed}: ${(err as Error).message}`);
    }
  }
  // The generator must actually exercise both kinds, or the test proves nothing.
  assert.ok(placements > CLUSTERS, `only ${placements} placements`);
  assert.ok(multi > CLUSTERS / 10, `only ${multi} multi-node placements`);
});

test.run();
