// The reconciler's rules on a synthetic clock, with agents played by a small harness
// that obeys commands and reports as the real agent does. The fleet end-to-end specs
// run the same logic with real agents and engines.
import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import type { ShardStatus } from '../../src/messages/agent.js';
import { Fleet, model, prof } from './fleet-sim.js';
import { fabric } from './cluster.js';

test('nothing is placed until agents have had the settle period to report, counted from the first Register', () => {
  const f = new Fleet([model('m', 2)]);
  f.advance(10_000);
  f.join('n1');
  f.advance(3_000);
  f.join('n2');
  f.advance(1_000);
  assert.is(f.replicas().length, 0, 'a server up long before its agents still waits for the stragglers');
  f.advance(3_000);
  assert.equal(f.replicas('ready').map((r) => r.shards[0]!.node).sort(), ['n1', 'n2'], 'so a cold-started fleet is spread, not piled on its first node');
});

test('after a restart, the settle period ends as soon as every node of the roster has reported', () => {
  const f = new Fleet([model('m', 2)], { expectedNodes: ['n1', 'n2'] });
  f.join('n1');
  f.advance(1_000);
  assert.is(f.replicas().length, 0, 'n2 may still run a replica: nothing placed');
  f.join('n2');
  f.advance(2_000);
  assert.is(f.replicas('ready').length, 2, 'no need to wait out the rest (one placement a pass)');
  const g = new Fleet([model('m', 1)], { expectedNodes: ['n1', 'gone'] });
  g.join('n1');
  g.advance(4_000);
  assert.is(g.replicas().length, 0);
  g.advance(2_000);
  assert.is(g.replicas().length, 1, 'a node that never returns delays placement by the settle period, no more');
});

test('the roster changes when a node joins or is lost, not on every report', () => {
  const f = new Fleet([model('m', 0)], { settleMs: 0 });
  f.join('n1');
  f.join('n2');
  assert.equal(f.rec.rosterChange()?.sort(), ['n1', 'n2']);
  f.join('n1');
  f.advance(2_000);
  assert.is(f.rec.rosterChange(), null);
  f.advance(40_000, ['n2']);
  assert.equal(f.rec.rosterChange(), ['n1']);
  f.join('n2');
  assert.equal(f.rec.rosterChange()?.sort(), ['n1', 'n2']);
});

test('one placement per pass, replicas spread over nodes, and each ready one published', () => {
  const f = new Fleet([model('m', 2)], { settleMs: 0 });
  f.join('n1');
  f.join('n2');
  f.rec.tick(f.now);
  assert.is(f.replicas().length, 1, 'one pass places one replica');
  f.flush();
  f.advance(1_000);
  const nodes = f.replicas('ready').map((r) => r.shards[0]!.node).sort();
  assert.equal(nodes, ['n1', 'n2']);
  assert.equal(f.endpoints, f.replicas('ready').map((r) => r.id).sort());
  const spec = f.replicas()[0]!.shards[0]!.spec;
  assert.is(spec.servedName, 'm');
  assert.is(spec.model, '/models/m');
  assert.is(spec.httpHost, spec.httpHost!.startsWith('10.0.0.') ? spec.httpHost : 'not a node address');
});

test('a multi-node replica starts its leader first, on one fabric', () => {
  const p = prof({ name: 'tp16', tp: 16, nodes: 2, gpus_per_node: 8, launch_mode: 'mp' });
  const f = new Fleet([model('big', 1, [p])], { settleMs: 0 });
  f.autoReady = false;
  f.join('n1', 8, [fabric('ib-a')]);
  f.join('n2', 8, [fabric('ib-a')]);
  f.join('n3', 8, [fabric('ib-b')]);
  f.rec.tick(f.now);
  const first = f.rec.dispatches(f.now);
  assert.equal(first.map((d) => (d.command as { spec: { rank: number } }).spec.rank), [0], 'only rank 0 is started first');
  f.sent.push(...first);
  const r = f.replicas()[0]!;
  const leaderNode = r.shards[0]!.node;
  const shards = f.running.get(leaderNode)!;
  const cmd = first[0]!.command as { shard: string; spec: ShardStatus['spec'] };
  shards.set(cmd.shard, { id: cmd.shard, spec: cmd.spec, state: 'starting', since: 0, reason: null, tail: null, adopted: false, processes: [] });
  f.rec.shardStatus(leaderNode, shards.get(cmd.shard)!, f.now);
  f.flush();
  const nodes = r.shards.map((s) => s!.node).sort();
  assert.equal(nodes, ['n1', 'n2'], 'both ranks on fabric ib-a');
  assert.ok(f.commands('start').some((d) => (d.command as { spec: { rank: number } }).spec.rank === 1), 'rank 1 starts once rank 0 has');
  const spec1 = r.shards[1]!.spec;
  assert.is(spec1.leader!.ip, r.shards[0]!.spec.nodeIp);
  assert.equal(spec1.transport, { kind: 'fabric', fabric: 'ib-a', linkLayer: 'InfiniBand', hcas: ['mlx5_0', 'mlx5_1'] });
  assert.is(spec1.mgmtInterface, 'eth0');
});

test('a failed shard fails the replica: stopped, GPUs freed once stopped, rebuilt after a backoff', () => {
  const f = new Fleet([model('m', 1)], { settleMs: 0 });
  f.join('n1', 1);
  f.advance(1_000);
  const r = f.replicas('ready')[0]!;
  const shard = r.shards[0]!;
  f.autoReady = false;
  // The agent reports the engine died; it stays listed as failed until told to stop.
  const st = { ...f.running.get('n1')!.get(shard.id)!, state: 'failed' as const, reason: 'exit code 1', tail: ['CUDA out of memory'] };
  f.running.get('n1')!.set(shard.id, st);
  f.rec.shardStatus('n1', st, f.now);
  assert.is(r.state, 'failed');
  assert.match(r.reason!, /CUDA out of memory/);
  f.flush();
  assert.equal(f.endpoints, [], 'unpublished at once');
  assert.is(f.replicas().length, 0, 'a failed shard holds no GPU: the replica is released');
  // Backoff: 0.5 × 1000 ms after the first failure; not placed before.
  f.rec.tick(f.now + 400);
  assert.is(f.replicas().length, 0);
  f.advance(1_000);
  assert.is(f.replicas().length, 1);
  assert.is.not(f.replicas()[0]!.id, r.id);
});

test('a silent node is unreachable first (its replicas keep serving), then lost (rebuilt elsewhere)', () => {
  const f = new Fleet([model('m', 1)], { settleMs: 0 });
  f.join('n1', 1);
  f.advance(1_000);
  f.join('n2', 1);
  const r = f.replicas('ready')[0]!;
  assert.is(r.shards[0]!.node, 'n1');
  f.advance(12_000, ['n1']);
  assert.is(f.rec.inventory.node('n1')!.state, 'unreachable');
  assert.is(r.state, 'ready', 'an agent away is not an engine down');
  assert.equal(f.endpoints, [r.id]);
  f.advance(20_000, ['n1']);
  assert.is(f.rec.inventory.node('n1')!.state, 'lost');
  const now = f.replicas('ready');
  assert.is(now.length, 1);
  assert.is(now[0]!.shards[0]!.node, 'n2');
  assert.equal(f.endpoints, [now[0]!.id]);
  // The lost node comes back with its engine still serving: adopted, it is one replica
  // too many, and drains away (it is the youngest) while the rebuilt one stays.
  f.join('n1', 1);
  f.advance(2_000);
  assert.ok(f.sent.some((d) => d.node === 'n1' && d.command.kind !== 'start' && d.command.shard === r.shards[0]!.id));
  assert.equal(f.replicas('ready').map((x) => x.id), [now[0]!.id]);
});

test('drain: the replacement serves first, the router drops the old one, then it drains', () => {
  const f = new Fleet([model('m', 1)], { settleMs: 0 });
  f.join('n1', 1);
  f.advance(1_000);
  const old = f.replicas('ready')[0]!;
  f.join('n2', 1);
  f.autoReady = false;
  f.rec.drain('n1', f.now);
  f.advance(1_000);
  assert.is(old.state, 'ready', 'serves while its replacement starts');
  assert.equal(f.endpoints, [old.id]);
  const repl = f.replicas().find((r) => r.id !== old.id)!;
  assert.is(repl.shards[0]!.node, 'n2');
  // Replacement ready; the router has not yet applied the new set.
  f.autoApply = false;
  f.status('n2', repl.shards[0]!.id, 'ready');
  f.advance(1_000);
  assert.is(old.state, 'ready', 'not retired before the router routes to the replacement');
  f.autoApply = true;
  const pending = f.rec.publication();
  f.rec.routerApplied(f.rec.publication()?.version ?? pending?.version ?? Number.MAX_SAFE_INTEGER);
  f.advance(1_000);
  assert.is(old.state, 'draining');
  assert.equal(f.endpoints, [repl.id]);
  assert.ok(f.commands('drain').some((d) => d.node === 'n1'), 'told to drain once unpublished');
  assert.is(f.replicas().includes(old), false, 'released once stopped');
  assert.is(f.rec.inventory.node('n1')!.holderOf(0), null);
});

test('a drain never sends the drain before the router applied the set without the replica', () => {
  const f = new Fleet([model('m', 1)], { settleMs: 0 });
  f.join('n1', 1);
  f.join('n2', 1);
  f.advance(2_000);
  f.autoApply = false;
  f.rec.setCatalog([model('m', 0)]);
  f.advance(2_000);
  const r = f.replicas()[0]!;
  assert.is(r.state, 'draining');
  assert.is(f.commands('drain').length, 0);
  f.rec.routerApplied(Number.MAX_SAFE_INTEGER);
  f.advance(1_000);
  assert.is(f.commands('drain').length, 1);
});

test('scale-down retires the extra replica; scale-up places again', () => {
  const f = new Fleet([model('m', 2)], { settleMs: 0 });
  f.join('n1', 2);
  f.join('n2', 2);
  f.advance(3_000);
  assert.is(f.replicas('ready').length, 2);
  f.rec.setCatalog([model('m', 1)]);
  f.advance(2_000);
  assert.is(f.replicas().length, 1);
  assert.is(f.endpoints.length, 1);
  f.rec.setCatalog([model('m', 3)]);
  f.advance(4_000);
  assert.is(f.replicas('ready').length, 3);
});

test('a restarted control plane rebuilds replicas from the Registers and places no duplicate', () => {
  const f = new Fleet([model('m', 2), model('gone', 0)], { settleMs: 0 });
  f.join('n1', 2);
  f.join('n2', 2);
  f.advance(3_000);
  const before = f.replicas('ready').map((r) => r.id).sort();
  assert.is(before.length, 2);
  // An engine of a model since removed from the catalog is also running on n2.
  const stray: ShardStatus = { ...[...f.running.get('n2')!.values()][0]!, id: 'gone-x-r0' };
  stray.spec && Object.assign(stray, { spec: { ...stray.spec, replica: 'gone-x', servedName: 'gone', gpus: [{ index: 1, class: 'h100-80g', computeCapability: '9.0' }], httpPort: 30050 } });
  f.running.get('n2')!.set(stray.id, stray);

  const g = new Fleet([model('m', 2)], { settleMs: 5_000 });
  g.now = f.now;
  g.running.set('n1', f.running.get('n1')!);
  g.running.set('n2', f.running.get('n2')!);
  g.join('n1', 2);
  g.join('n2', 2);
  assert.equal(g.replicas('ready').map((r) => r.id).sort(), before, 'the same replicas, ready at once');
  assert.equal(g.endpoints, before);
  g.advance(10_000);
  assert.is(g.commands('start').length, 0, 'nothing new placed: no duplicate');
  assert.ok(g.commands('stop').some((d) => (d.command as { shard: string }).shard === 'gone-x-r0'), 'the unclaimed shard is stopped');
  assert.is(g.rec.inventory.node('n2')!.holderOf(1), null, 'its GPU freed once stopped');
});

test('an agent restart that reports the same shards changes nothing', () => {
  const f = new Fleet([model('m', 2)], { settleMs: 0 });
  f.join('n1', 1);
  f.join('n2', 1);
  f.advance(3_000);
  const sent = f.sent.length;
  const ready = f.replicas('ready').map((r) => r.id);
  f.rec.disconnected('n1');
  f.advance(5_000, ['n1']);
  f.join('n1', 1);
  f.advance(3_000);
  assert.is(f.sent.length, sent, 'no command at all');
  assert.equal(f.replicas('ready').map((r) => r.id), ready);
});

test('a shard that vanished while its agent was away fails its replica', () => {
  const f = new Fleet([model('m', 1)], { settleMs: 0 });
  f.join('n1', 2);
  f.advance(2_000);
  const r = f.replicas('ready')[0]!;
  f.running.get('n1')!.clear();
  f.join('n1', 2);
  assert.is(r.state, 'failed');
  assert.match(r.reason!, /no longer running/);
});

test('a start that is not acknowledged is sent again after the resend interval, not before', () => {
  const f = new Fleet([model('m', 1)], { settleMs: 0 });
  f.join('n1', 1);
  f.rec.tick(f.now);
  const first = f.rec.dispatches(f.now);
  assert.is(first.length, 1);
  assert.is(f.rec.dispatches(f.now + 2_000).length, 0);
  assert.is(f.rec.dispatches(f.now + 3_000).length, 1);
});

test('a replica that does not become ready within its startup timeout is failed and rebuilt', () => {
  const f = new Fleet([model('m', 1, [prof({ startup_timeout_ms: 5_000 })])], { settleMs: 0 });
  f.autoReady = false;
  f.join('n1', 1);
  f.advance(7_000);
  assert.ok(f.sent.filter((d) => d.command.kind === 'stop').length >= 1);
  assert.ok(f.replicas().some((r) => r.state === 'pending' || r.state === 'starting'), 'a new attempt');
});

test.run();
