import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { Inventory } from '../../src/control/inventory.js';
import { explainPlacement, placeReplica, type PlacementProfile, type PlacementResult, type ReplicaPlacement } from '../../src/control/placement.js';
import { chooseGpus } from '../../src/control/gpu-choice.js';
import { fabric, gpus, node, profile } from './cluster.js';
import type { NodeRegistration } from '../../src/messages/fleet.js';

const RANGE = [30000, 30099] as const;

function inv(...nodes: NodeRegistration[]): Inventory {
  const i = new Inventory();
  for (const n of nodes) i.register(n);
  return i;
}
function place(i: Inventory, profiles: PlacementProfile[], model = 'm', replica = 'r1', portRange: readonly [number, number] = RANGE): PlacementResult {
  return placeReplica(i.nodes(), { model, replica, profiles, portRange });
}
function placed(r: PlacementResult): ReplicaPlacement {
  if (!r.placement) throw new Error(`not placed:\n${explainPlacement('m', r)}`);
  return r.placement;
}
const nodesOf = (p: ReplicaPlacement): string[] => p.shards.map((s) => s.node);

test('a single-node replica takes tp × pp GPUs of its class on one node, an HTTP port and no fabric', () => {
  const p = placed(place(inv(node('n1', gpus('h100-80g', 8))), [profile('tp2pp2', { tp: 2, pp: 2 })]));
  assert.is(p.shards.length, 1);
  assert.is(p.shards[0]!.gpus.length, 4);
  assert.ok(p.shards[0]!.gpus.every((g) => g.class === 'h100-80g' && g.computeCapability === '9.0'));
  assert.equal(p.shards[0]!.hcas, []);
  assert.is(p.fabric, null);
  assert.is(p.shards[0]!.httpPort, 30000);
  assert.is(p.rendezvousPort, null);
});

test('the highest-priority profile that fits wins; the ones before it are explained', () => {
  const i = inv(node('a', gpus('a100-40g', 8)), node('h', gpus('h100-80g', 8)));
  const first = placed(place(i, [profile('h100', { tp: 8 }), profile('a100', { gpu_class: 'a100-40g', tp: 8 })]));
  assert.is(first.profile, 'h100');
  const r = place(inv(node('a', gpus('a100-40g', 8))), [profile('h100', { tp: 8 }), profile('a100', { gpu_class: 'a100-40g', tp: 8 })]);
  assert.is(placed(r).profile, 'a100');
  assert.equal(r.rejections.map((x) => [x.profile, x.node, x.code]), [['h100', 'a', 'no-gpu-of-class']]);
  assert.match(r.rejections[0]!.reason, 'has no h100-80g GPUs (it has 8 × a100-40g)');
});

test('bin packing: a single-node replica goes to the fullest node that fits, not the empty one', () => {
  const i = inv(node('empty', gpus('h100-80g', 8)), node('partial', gpus('h100-80g', 8)));
  i.allocate(placed(placeReplica([i.node('partial')!], { model: 'other', replica: 'o1', profiles: [profile('tp4', { tp: 4 })], portRange: RANGE })));
  assert.equal(nodesOf(placed(place(i, [profile('tp4', { tp: 4 })]))), ['partial']);
});

test('replicas of one model spread over nodes before they stack, even against bin packing', () => {
  const i = inv(node('n1', gpus('h100-80g', 8)), node('n2', gpus('h100-80g', 8)));
  const first = placed(place(i, [profile('tp1')], 'm', 'r1'));
  i.allocate(first);
  const second = placed(place(i, [profile('tp1')], 'm', 'r2'));
  assert.is.not(second.shards[0]!.node, first.shards[0]!.node);
  // A different model packs onto the fuller node.
  assert.equal(nodesOf(placed(place(i, [profile('tp1')], 'other', 'o1'))), [first.shards[0]!.node]);
});

test('a multi-node replica is formed inside one fabric, with that fabric\'s HCAs only and ranks in order', () => {
  const i = inv(
    node('a1', gpus('h100-80g', 8), [fabric('ib-a', ['mlx5_0', 'mlx5_1']), fabric('ib-b', ['mlx5_2'])]),
    node('a2', gpus('h100-80g', 8), [fabric('ib-a', ['mlx5_0', 'mlx5_1'])]),
    node('b1', gpus('h100-80g', 8), [fabric('ib-b', ['mlx5_2'])]),
  );
  const p = placed(place(i, [profile('2n', { tp: 8, pp: 2, nodes: 2, launch_mode: 'mp' })]));
  assert.equal(p.fabric, { name: 'ib-a', linkLayer: 'InfiniBand' });
  assert.equal(nodesOf(p).sort(), ['a1', 'a2']);
  assert.equal(p.shards.map((s) => s.rank), [0, 1]);
  for (const s of p.shards) assert.equal(s.hcas, ['mlx5_0', 'mlx5_1'], `${s.node} got ${s.hcas.join(',')}`);
});

test('two fabrics with one node each never make a two-node replica; each fabric says it is short', () => {
  const i = inv(node('a1', gpus('h100-80g', 8), [fabric('ib-a')]), node('b1', gpus('h100-80g', 8), [fabric('ib-b')]));
  const r = place(i, [profile('2n', { tp: 16, nodes: 2, launch_mode: 'ray' })]);
  assert.is(r.placement, null);
  assert.equal(r.rejections.map((x) => [x.fabric, x.code]), [['ib-a', 'fabric-too-small'], ['ib-b', 'fabric-too-small']]);
  assert.match(r.rejections[0]!.reason, 'only 1 qualifies (a1)');
});

test('nodes without a fabric take single-node replicas but are refused multi-node ones, saying why', () => {
  const i = inv(node('x1', gpus('h100-80g', 8)), node('x2', gpus('h100-80g', 8)));
  assert.ok(place(i, [profile('tp8', { tp: 8 })]).placement);
  const r = place(i, [profile('2n', { tp: 16, nodes: 2, engine: 'sglang' })]);
  assert.is(r.placement, null);
  assert.equal(r.rejections.map((x) => x.code), ['no-fabric', 'no-fabric', 'no-fabric']);
  assert.match(r.rejections[2]!.reason, 'no node reports a fabric');
});

test('a fabric with no active adapter on a node does not count that node', () => {
  const i = inv(node('a1', gpus('h100-80g', 8), [fabric('ib-a')]), node('a2', gpus('h100-80g', 8), [fabric('ib-a', [])]));
  const r = place(i, [profile('2n', { tp: 16, nodes: 2, launch_mode: 'mp' })]);
  assert.is(r.placement, null);
  assert.ok(r.rejections.some((x) => x.node === 'a2' && x.code === 'fabric-without-hcas'));
});

test('multi-node replicas take the emptiest nodes of the fabric', () => {
  const f = [fabric('ib-a')];
  const i = inv(node('a1', gpus('h100-80g', 8), f), node('a2', gpus('h100-80g', 8), f), node('a3', gpus('h100-80g', 8), f));
  i.allocate(placed(placeReplica([i.node('a2')!], { model: 'o', replica: 'o1', profiles: [profile('tp2', { tp: 2 })], portRange: RANGE })));
  assert.equal(nodesOf(placed(place(i, [profile('2n', { tp: 8, nodes: 2, launch_mode: 'mp' })]))).sort(), ['a1', 'a3']);
});

test('a GPU class is never mixed: only the profile class counts, and the reason says so', () => {
  const mixed = node('mixed', [...gpus('h100-80g', 4), ...gpus('a100-40g', 4, 0, 4)]);
  const i = inv(mixed);
  const r = place(i, [profile('tp8', { tp: 8 })]);
  assert.is(r.placement, null);
  assert.match(r.rejections[0]!.reason, 'has 4 of its 4 h100-80g GPUs free, needs 8');
  const p = placed(place(i, [profile('tp4', { tp: 4 })]));
  assert.equal(p.shards[0]!.gpus.map((g) => g.index), [0, 1, 2, 3]);
});

test('a GPU with a problem or held by a replica is never free, and the reason names it', () => {
  const g = gpus('h100-80g', 8).map((x) => (x.index === 0 ? { ...x, problems: ['12 uncorrected ECC errors'] } : x));
  const i = inv(node('n1', g));
  i.allocate(placed(place(i, [profile('tp1')], 'o', 'o1')));
  const r = place(i, [profile('tp8', { tp: 8 })]);
  assert.is(r.placement, null);
  assert.match(r.rejections[0]!.reason, 'has 6 of its 8 h100-80g GPUs free, needs 8 (GPU 0: 12 uncorrected ECC errors; GPU 1 held by o1)');
  const p = placed(place(i, [profile('tp6', { tp: 6 })], 'm', 'r2'));
  assert.equal(p.shards[0]!.gpus.map((x) => x.index), [2, 3, 4, 5, 6, 7]);
});

test('cordoned, unreachable and lost nodes take nothing, each with the state in its reason', () => {
  const i = inv(node('c', gpus('h100-80g', 8)), node('u', gpus('h100-80g', 8)), node('l', gpus('h100-80g', 8)));
  i.cordon('c');
  i.unreachable('u');
  i.lost('l');
  const r = place(i, [profile('tp1')]);
  assert.is(r.placement, null);
  assert.equal(r.rejections.map((x) => [x.node, x.code, x.reason.split(':')[0]]), [
    ['c', 'node-not-ready', 'is cordoned'],
    ['l', 'node-not-ready', 'is lost'],
    ['u', 'node-not-ready', 'is unreachable'],
  ]);
});

test('NVLink: a TP group stays inside one domain, the smallest that fits, rather than the lowest indices', () => {
  const i = inv(node('n1', gpus('h100-80g', 8, 4)));
  i.allocate(placed(place(i, [profile('tp1')], 'o', 'o1')));
  // GPU 0 is held: the lowest four free (1-4) would span both domains.
  assert.equal(placed(place(i, [profile('tp4', { tp: 4 })])).shards[0]!.gpus.map((g) => g.index), [4, 5, 6, 7]);
  // A group of two goes to the already broken domain, keeping 4-7 whole.
  assert.equal(placed(place(i, [profile('tp2', { tp: 2 })])).shards[0]!.gpus.map((g) => g.index), [1, 2]);
});

test('GPU choice: without topology the lowest indices; with no domain roomy enough, the fewest domains', () => {
  assert.equal(chooseGpus(gpus('h100-80g', 8).slice(3), 2), [3, 4]);
  const domains = gpus('h100-80g', 8, 2).filter((g) => g.index !== 0 && g.index !== 2);
  // Domains 0 and 1 have one free each, 2 and 3 two: four GPUs come from 2 and 3.
  assert.equal(chooseGpus(domains, 4), [4, 5, 6, 7]);
  // A GPU with no NVLink peer is the home of a group of one.
  assert.equal(chooseGpus([...gpus('h100-80g', 4, 4), { ...gpus('h100-80g', 1, 0, 4)[0]! }], 1), [4]);
});

test('ports: two replicas on one node get different HTTP ports from the range, and a full range is a reason', () => {
  const i = inv(node('n1', gpus('h100-80g', 8)));
  const a = placed(place(i, [profile('tp1')], 'a', 'a1', [30000, 30001]));
  i.allocate(a);
  const b = placed(place(i, [profile('tp1')], 'b', 'b1', [30000, 30001]));
  i.allocate(b);
  assert.equal([a.shards[0]!.httpPort, b.shards[0]!.httpPort], [30000, 30001]);
  const r = place(i, [profile('tp1')], 'c', 'c1', [30000, 30001]);
  assert.is(r.placement, null);
  assert.is(r.rejections[0]!.code, 'no-free-port');
  assert.match(r.rejections[0]!.reason, 'port range 30000-30001');
});

test('ports follow engine and launch mode: SGLang keeps a block above its dist-init port; a Ray head holds 8265 and 10001', () => {
  const f = [fabric('ib-a')];
  const i = inv(node('a1', gpus('h100-80g', 8), f), node('a2', gpus('h100-80g', 8), f), node('a3', gpus('h100-80g', 8), f));
  const s = placed(place(i, [profile('sg', { engine: 'sglang', tp: 8, nodes: 2 })], 'm', 's1'));
  assert.equal(s.shards[0]!.ports, [30000, 30001, 30002, 30003, 30004, 30005, 30006, 30007, 30008, 30009]);
  assert.is(s.rendezvousPort, 30001);
  assert.equal(s.shards[1]!.ports, [30000]);
  assert.is(s.shards[1]!.httpPort, 30000);
  i.allocate(s);

  const ray = placed(place(i, [profile('ray', { tp: 8, nodes: 2, launch_mode: 'ray' })], 'v', 'v1'));
  assert.equal(ray.shards[0]!.ports.slice(-2), [8265, 10001]);
  assert.equal(ray.shards[1]!.ports, []);
  assert.is(ray.shards[1]!.httpPort, null);
  i.allocate(ray);
  const mp = placed(place(i, [profile('mp', { tp: 2, nodes: 2, launch_mode: 'mp' })], 'w', 'w1'));
  assert.equal(mp.shards[0]!.ports.length, 2);
  assert.equal(mp.shards[1]!.ports, []);

});

test('a node holds one Ray head: the next Ray replica leads elsewhere, and with no head free it says so', () => {
  const f = [fabric('ib-a')];
  const i = inv(node('a1', gpus('h100-80g', 8), f), node('a2', gpus('h100-80g', 8), f));
  const ray = profile('ray', { tp: 2, nodes: 2, launch_mode: 'ray' });
  const first = placed(place(i, [ray], 'v', 'v1'));
  i.allocate(first);
  const second = placed(place(i, [ray], 'w', 'w1'));
  assert.is(second.shards[0]!.node, first.shards[1]!.node);
  i.allocate(second);
  const r = place(i, [ray], 'x', 'x1');
  assert.is(r.placement, null);
  assert.match(r.rejections[0]!.reason, "none can be rank 0: a1 already runs a Ray head: Ray's dashboard (8265)");
});

test('a profile whose GPUs do not split over its nodes, or a multi-node vLLM one without a launch mode, is refused', () => {
  const i = inv(node('a1', gpus('h100-80g', 8), [fabric('ib-a')]), node('a2', gpus('h100-80g', 8), [fabric('ib-a')]));
  const r = place(i, [profile('odd', { tp: 3, nodes: 2, launch_mode: 'mp' }), profile('nomode', { tp: 8, nodes: 2 })]);
  assert.is(r.placement, null);
  assert.equal(r.rejections.map((x) => [x.profile, x.code]), [['odd', 'profile-invalid'], ['nomode', 'profile-invalid']]);
  assert.match(r.rejections[0]!.reason, 'tp × pp = 3 GPUs do not split evenly over 2 nodes');
});

test('explain-placement names every profile, node and reason', () => {
  const r = place(inv(node('n1', gpus('a100-40g', 2))), [profile('tp8', { tp: 8 })]);
  const text = explainPlacement('llama', r);
  assert.match(text, 'llama: no profile fits');
  assert.match(text, 'tp8 @ n1: has no h100-80g GPUs (it has 2 × a100-40g)');
});

test('an empty cluster places nothing and says no candidate exists', () => {
  const r = place(new Inventory(), [profile('tp1')]);
  assert.is(r.placement, null);
  assert.equal(r.rejections, []);
  assert.is(explainPlacement('m', r), 'm: no profile fits');
});

test.run();
