// The reconciler under random histories: nodes joining, dying with or without their
// engines, coming back, drained and uncordoned, shards failing, scaling changed, and
// the control plane itself restarting and recovering from the agents' Registers. After
// every step, what the agents actually run must never put two engines on one GPU, the
// inventory must match the replicas held, no model may run more replicas than its
// maximum, and once the fleet is quiet every model has what it asks for where it fits.
import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { ACTIVE } from '../../src/control/replica.js';
import type { PlacedModel } from '../../src/messages/catalog.js';
import { rng } from './cluster.js';
import { Fleet, model, OPTS, prof } from './fleet-sim.js';

const RUNS = 60;
const STEPS = 80;

function catalog(r: ReturnType<typeof rng>, mins: readonly number[]): PlacedModel[] {
  return mins.map((min, i) => model(`m${i}`, min, [prof({ name: `tp${[1, 2, 4][i % 3]}`, tp: [1, 2, 4][i % 3]!, gpus_per_node: [1, 2, 4][i % 3]! })], min + r.int(2)));
}

/** An operator's command names a node this control plane has heard from (else it is refused). */
const known = (f: Fleet, node: string): boolean => f.rec.nodeMeta(node) !== undefined;

/** What must hold after every step. */
function check(f: Fleet, maxOf: ReadonlyMap<string, number>, where: string): void {
  // 1. No GPU runs two engines: over what the agents report running.
  for (const [node, shards] of f.running) {
    const held = new Map<number, string>();
    for (const s of shards.values()) {
      if (s.state === 'stopped' || s.state === 'failed' || !s.spec) continue;
      for (const g of s.spec.gpus) {
        assert.not.ok(held.has(g.index), `${where}: GPU ${g.index} on ${node} runs ${held.get(g.index)} and ${s.id}`);
        held.set(g.index, s.id);
      }
    }
  }
  // 2. The inventory's holds are exactly the replicas' shards.
  const replicas = [...f.rec.replicas()];
  for (const n of f.rec.inventory.nodes()) {
    for (const g of n.gpus) {
      const holder = n.holderOf(g.index);
      if (holder === null) continue;
      const r = replicas.find((x) => x.id === holder);
      assert.ok(r, `${where}: GPU ${g.index} on ${n.id} held by ${holder}, which the reconciler does not hold`);
      assert.ok(r!.placement.shards.some((s) => s.node === n.id && s.gpus.some((x) => x.index === g.index)), `${where}: ${holder} holds GPU ${g.index} on ${n.id} outside its placement`);
    }
  }
  // 3. No model runs more than its maximum of replicas that stay.
  for (const [m, max] of maxOf) {
    const staying = replicas.filter((r) => r.model === m && ACTIVE.has(r.state) && r.leaving === null).length;
    assert.ok(staying <= max, `${where}: ${m} keeps ${staying} replicas, above its max ${max}`);
  }
}

test(`${RUNS} random fleet histories: never two engines on a GPU, inventory and replicas agree, max respected, min reached when quiet`, () => {
  for (let seed = 1; seed <= RUNS; seed++) {
    const r = rng(seed);
    const mins = Array.from({ length: 1 + r.int(3) }, () => r.int(3));
    let models = catalog(r, mins);
    const maxOf = new Map(models.map((m) => [m.name, m.scaling.max]));
    const f = new Fleet(models, { settleMs: 2_000, random: () => r.int(1000) / 1000 });
    const nodes = Array.from({ length: 3 + r.int(4) }, (_, i) => `n${i}`);
    const size = new Map(nodes.map((n) => [n, 2 + 2 * r.int(4)]));
    const down = new Set<string>();
    for (const n of nodes) f.join(n, size.get(n)!);
    const history: string[] = [];
    for (let step = 0; step < STEPS; step++) {
      const node = r.pick(nodes);
      const roll = r.int(100);
      let what: string;
      if (roll < 40) {
        const ms = 500 + r.int(5_000);
        f.advance(ms, [...down]);
        what = `advance ${ms}`;
      } else if (roll < 50 && !down.has(node)) {
        // The node dies; with its engines half the time.
        down.add(node);
        f.rec.disconnected(node);
        if (r.chance(0.5)) f.running.get(node)!.clear();
        what = `kill ${node}`;
      } else if (roll < 62 && down.has(node)) {
        down.delete(node);
        f.join(node, size.get(node)!);
        what = `revive ${node}`;
      } else if (roll < 68 && !down.has(node)) {
        f.join(node, size.get(node)!);
        what = `agent restart ${node}`;
      } else if (roll < 73) {
        if (!known(f, node)) continue;
        f.rec.drain(node, f.now);
        what = `drain ${node}`;
      } else if (roll < 78) {
        if (!known(f, node)) continue;
        f.rec.uncordon(node);
        what = `uncordon ${node}`;
      } else if (roll < 86) {
        const live = [...f.running.get(node)!.values()].filter((s) => s.state === 'ready');
        if (live.length === 0 || down.has(node)) continue;
        const s = r.pick(live);
        f.status(node, s.id, 'failed', 'exit code 1');
        what = `fail ${s.id}`;
      } else if (roll < 93) {
        models = models.map((m) => (m.name === `m${r.int(models.length)}` ? { ...m, scaling: { min: Math.min(r.int(3), maxOf.get(m.name)!), max: maxOf.get(m.name)! } } : m));
        f.rec.setCatalog(models);
        what = `scale ${models.map((m) => m.scaling.min).join('/')}`;
      } else {
        // The control plane restarts: a new reconciler, the roster as it was.
        const roster = nodes.filter((n) => !down.has(n));
        f.rec = new (f.rec.constructor as typeof import('../../src/control/reconciler.js').Reconciler)({ ...OPTS, settleMs: 2_000, expectedNodes: roster }, models);
        for (const n of roster) f.join(n, size.get(n)!);
        what = 'control plane restart';
      }
      history.push(what);
      check(f, maxOf, `seed ${seed} after ${history.slice(-6).join(', ')}`);
    }
    // Quiet: every node back and uncordoned, time to converge.
    for (const n of down) f.join(n, size.get(n)!);
    down.clear();
    for (const n of nodes) f.rec.uncordon(n);
    f.advance(120_000);
    check(f, maxOf, `seed ${seed} quiet`);
    for (const m of models) {
      const ready = [...f.rec.replicas()].filter((x) => x.model === m.name && x.state === 'ready' && x.leaving === null).length;
      const fits = f.rec.explain(m.name).placement !== null;
      assert.ok(ready === m.scaling.min || (ready < m.scaling.min && !fits), `seed ${seed}: ${m.name} has ${ready} ready of min ${m.scaling.min}${fits ? ' though another fits' : ''} (${history.join(', ')})`);
    }
  }
});

test.run();
