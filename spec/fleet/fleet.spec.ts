// The fleet end to end: a real server with its control plane, real agents launching the
// sim engine as their vllm, the official OpenAI client on the data port, and no static
// endpoint at all. Each test builds its own fleet; what they kill is real processes.
import { suite } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { groupAlive } from '../../src/agent/supervisor/index.js';
import { until } from '../support/until.js';
import { engineGroups, readyReplicas, replicas, startFleet, startNode, stopNode, streamLoad, untilServing, type Fleet } from './harness.js';

const spec = suite<{ fleet: Fleet | null }>('fleet');
spec.before.each((ctx) => {
  ctx.fleet = null;
});
spec.after.each(async (ctx) => {
  await ctx.fleet?.stop();
});

const CHAT = (min: number, extra = '') => `  - name: chat
    source: /models/chat-8b
    scaling: { min: ${min}, max: 4 }
    profiles:
      - { name: h100-tp1, engine: vllm, gpu_class: h100-80g, tp: 1, startup_timeout_ms: 30000 }${extra}`;

spec('a model with scaling.min 2 comes up on two nodes and serves the OpenAI client, with no static endpoint', async (ctx) => {
  const fleet = (ctx.fleet = await startFleet(CHAT(2)));
  await Promise.all([startNode(fleet, 'node-a'), startNode(fleet, 'node-b')]);
  const ready = await untilServing(fleet, 'chat', 2);
  assert.equal(ready.map((r) => r.shards[0].node).sort(), ['node-a', 'node-b'], 'spread over both nodes');
  const res = await fleet.openai().chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'hello' }], max_tokens: 8 });
  assert.ok(res.choices[0]!.message.content!.length > 0);
  const nodes = (await fleet.admin('GET', '/admin/v1/nodes')).json as any[];
  assert.equal(nodes.map((n) => [n.name, n.state, n.gpus.filter((g: any) => g.allocated).length]).sort(), [
    ['node-a', 'ready', 1],
    ['node-b', 'ready', 1],
  ]);
});

spec('an agent and its engines killed under load: unreachable, lost, rebuilt on a survivor, traffic keeps flowing', async (ctx) => {
  const fleet = (ctx.fleet = await startFleet(CHAT(2)));
  await Promise.all([startNode(fleet, 'node-a'), startNode(fleet, 'node-b')]);
  await untilServing(fleet, 'chat', 2);
  await startNode(fleet, 'node-c');
  const load = streamLoad(fleet, 'chat', 4);
  await until(() => load.ok >= 8, 'traffic flowing', 10_000);
  const victim = (await readyReplicas(fleet, 'chat'))[0].shards[0].node as string;
  await stopNode(fleet.nodes.get(victim)!, true, 'SIGKILL');
  const states = new Set<string>();
  await until(
    async () => {
      const n = ((await fleet.admin('GET', '/admin/v1/nodes')).json as any[]).find((x) => x.name === victim);
      states.add(n.state);
      return n.state === 'lost';
    },
    `${victim} lost`,
    15_000,
  );
  assert.ok(states.has('unreachable'), `went unreachable before lost (saw ${[...states].join(', ')})`);
  const ready = await untilServing(fleet, 'chat', 2);
  assert.ok(ready.every((r) => r.shards[0].node !== victim), 'nothing left on the dead node');
  const before = { ok: load.ok, failed: load.failed };
  await until(() => load.ok >= before.ok + 8, 'traffic after the rebuild', 10_000);
  await load.stop();
  console.log(`    agent+engines killed: ${load.ok} ok, ${load.failed} failed (${before.failed} before the rebuild)`);
  assert.is(load.failed, before.failed, `no failure after the rebuild: ${load.errors.join(' | ')}`);
  assert.ok(load.failed < load.ok, 'fewer failures than successes');
});

spec('only the agent restarted within unreachable_after: it adopts its engines, nothing is rebuilt, no request fails', async (ctx) => {
  const fleet = (ctx.fleet = await startFleet(CHAT(2)));
  await Promise.all([startNode(fleet, 'node-a'), startNode(fleet, 'node-b')]);
  const ready = await untilServing(fleet, 'chat', 2);
  const ids = ready.map((r) => r.id).sort();
  const node = fleet.nodes.get('node-a')!;
  const groups = await engineGroups(node);
  const load = streamLoad(fleet, 'chat', 4);
  await until(() => load.ok >= 8, 'traffic flowing', 10_000);
  await stopNode(node, false, 'SIGKILL');
  assert.ok(groups.every(groupAlive), 'its engines kept running');
  await startNode(fleet, 'node-a');
  await until(async () => ((await fleet.admin('GET', '/admin/v1/nodes')).json as any[]).find((n) => n.name === 'node-a')?.connected === true, 'agent back', 10_000);
  const okAtReturn = load.ok;
  await until(() => load.ok >= okAtReturn + 8, 'traffic after the return', 10_000);
  await load.stop();
  assert.equal((await readyReplicas(fleet, 'chat')).map((r) => r.id).sort(), ids, 'the same replicas, nothing rebuilt');
  assert.equal(await engineGroups(fleet.nodes.get('node-a')!), groups, 'the same engines, adopted');
  assert.is(load.failed, 0, load.errors.join(' | '));
});

spec('ctl drain moves a replica off a node, replacement first, with no failed request', async (ctx) => {
  const fleet = (ctx.fleet = await startFleet(CHAT(1)));
  await startNode(fleet, 'node-a');
  const [first] = await untilServing(fleet, 'chat', 1);
  await startNode(fleet, 'node-b');
  const load = streamLoad(fleet, 'chat', 4);
  await until(() => load.ok >= 8, 'traffic flowing', 10_000);
  const res = await fleet.admin('POST', '/admin/v1/nodes/node-a/drain');
  assert.is(res.status, 200, JSON.stringify(res.json));
  await until(async () => (await replicas(fleet, 'chat')).every((r) => r.id !== first.id), 'old replica gone', 30_000);
  const [now] = await untilServing(fleet, 'chat', 1);
  assert.is(now.shards[0].node, 'node-b');
  const okAfter = load.ok;
  await until(() => load.ok >= okAfter + 4, 'traffic after the move', 10_000);
  await load.stop();
  assert.is(load.failed, 0, load.errors.join(' | '));
  const nodeA = ((await fleet.admin('GET', '/admin/v1/nodes')).json as any[]).find((n) => n.name === 'node-a');
  assert.is(nodeA.state, 'draining');
  assert.is(nodeA.gpus.filter((g: any) => g.allocated).length, 0);
});

spec('the server restarted under load: agents reconnect, replicas are recovered, nothing duplicated or orphaned', async (ctx) => {
  const fleet = (ctx.fleet = await startFleet(CHAT(2)));
  await Promise.all([startNode(fleet, 'node-a'), startNode(fleet, 'node-b')]);
  const ids = (await untilServing(fleet, 'chat', 2)).map((r) => r.id).sort();
  const groups = new Map<string, number[]>();
  for (const n of fleet.nodes.values()) groups.set(n.name, await engineGroups(n));
  await fleet.restartServer();
  const again = await untilServing(fleet, 'chat', 2);
  assert.equal(again.map((r) => r.id).sort(), ids, 'the same replicas');
  assert.ok(again.every((r) => r.recovered), 'recovered from the agents');
  // Past the settle period: still exactly these two, and the engines are the same processes.
  const load = streamLoad(fleet, 'chat', 2);
  await until(() => load.ok >= 8, 'traffic after the restart', 10_000);
  await load.stop();
  assert.is(load.failed, 0, load.errors.join(' | '));
  assert.equal((await replicas(fleet, 'chat')).map((r) => r.id).sort(), ids, 'no duplicate placed');
  for (const n of fleet.nodes.values()) assert.equal(await engineGroups(n), groups.get(n.name), `${n.name}: no engine orphaned or replaced`);
});

spec.run();
