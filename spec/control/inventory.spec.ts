import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { Inventory } from '../../src/control/inventory.js';
import { placeReplica, type ReplicaPlacement } from '../../src/control/placement.js';
import { fabric, gpus, node, profile } from './cluster.js';

const RANGE = [30000, 30099] as const;

function placeOn(i: Inventory, replica: string, tp: number, nodes = 1): ReplicaPlacement {
  const r = placeReplica(i.nodes(), { model: 'm', replica, profiles: [profile('p', { tp, nodes, launch_mode: 'mp' })], portRange: RANGE });
  if (!r.placement) throw new Error(`not placed: ${r.rejections.map((x) => x.reason).join('; ')}`);
  return r.placement;
}
const code = (c: string) => (e: unknown) => (e as { code?: string }).code === c;

test('a cordon survives re-registration and a heartbeat; reachability comes back with either', () => {
  const i = new Inventory();
  i.register(node('n1', gpus('h100-80g', 8)));
  i.cordon('n1');
  i.unreachable('n1');
  assert.is(i.node('n1')!.state, 'unreachable');
  i.register(node('n1', gpus('h100-80g', 8)));
  assert.is(i.node('n1')!.state, 'cordoned');
  i.lost('n1');
  i.seen('n1');
  assert.is(i.node('n1')!.state, 'cordoned');
  i.uncordon('n1');
  assert.is(i.node('n1')!.state, 'ready');
});

test('re-registration replaces the hardware and keeps what the shards hold', () => {
  const i = new Inventory();
  i.register(node('n1', gpus('h100-80g', 4)));
  const p = placeOn(i, 'r1', 2);
  i.allocate(p);
  i.register(node('n1', gpus('h100-80g', 8)));
  assert.is(i.node('n1')!.gpus.length, 8);
  assert.equal(i.allocations('n1').map((a) => a.replica), ['r1']);
  assert.is(i.node('n1')!.holderOf(p.shards[0]!.gpus[0]!.index), 'r1');
});

test('a replica is released whole: every shard on every node frees its GPUs and ports', () => {
  const f = [fabric('ib-a')];
  const i = new Inventory();
  i.register(node('a1', gpus('h100-80g', 8), f));
  i.register(node('a2', gpus('h100-80g', 8), f));
  const keep = placeOn(i, 'keep', 1);
  i.allocate(keep);
  const p = placeOn(i, 'r1', 8, 2);
  i.allocate(p);
  assert.is(i.release('r1'), true);
  for (const id of ['a1', 'a2']) assert.equal(i.allocations(id).map((a) => a.replica), id === keep.shards[0]!.node ? ['keep'] : []);
  for (const s of p.shards) {
    for (const g of s.gpus) assert.is(i.node(s.node)!.holderOf(g.index), null);
    for (const port of s.ports) assert.ok(i.node(s.node)!.portFree(port) || keep.shards[0]!.ports.includes(port));
  }
  assert.is(i.node('a1')!.replicasOf('m') + i.node('a2')!.replicasOf('m'), 1);
  assert.is(i.release('r1'), false);
});

test('allocate refuses a placement decided on a stale view, and changes nothing', () => {
  const i = new Inventory();
  i.register(node('n1', gpus('h100-80g', 2)));
  const a = placeOn(i, 'a', 2);
  const b = placeOn(i, 'b', 2);
  i.allocate(a);
  assert.throws(() => i.allocate(b), code('LLMGW_PLACEMENT_CONFLICT'));
  assert.throws(() => i.allocate(a), code('LLMGW_PLACEMENT_CONFLICT'));
  assert.equal(i.allocations('n1').map((x) => x.replica), ['a']);
});

test('allocate refuses a GPU that reported a problem since placement', () => {
  const i = new Inventory();
  i.register(node('n1', gpus('h100-80g', 2)));
  const p = placeOn(i, 'a', 2);
  i.register(node('n1', gpus('h100-80g', 2).map((g) => (g.index === 1 ? { ...g, problems: ['40000 MiB held by pid 77 (python)'] } : g))));
  assert.throws(() => i.allocate(p), (e: unknown) => code('LLMGW_PLACEMENT_CONFLICT')(e) && /GPU 1 on n1 has a problem/.test((e as Error).message));
  assert.equal(i.allocations('n1'), []);
});

test('a registration with a GPU index or fabric twice is refused; an unknown node id is an error', () => {
  const i = new Inventory();
  assert.throws(() => i.register(node('n1', [...gpus('h100-80g', 2), ...gpus('h100-80g', 1)])), code('LLMGW_REGISTRATION_INVALID'));
  assert.throws(() => i.register(node('n1', [], [fabric('ib-a'), fabric('ib-a')])), code('LLMGW_REGISTRATION_INVALID'));
  assert.is(i.node('n1'), undefined);
  assert.throws(() => i.cordon('nope'), code('LLMGW_NODE_UNKNOWN'));
});

test('nodes are listed by id', () => {
  const i = new Inventory();
  for (const id of ['n3', 'n1', 'n2']) i.register(node(id, []));
  assert.equal(i.nodes().map((n) => n.id), ['n1', 'n2', 'n3']);
});

test.run();
