// The fleet end to end: a real server with its control plane, real agents launching the
// sim engine as their vllm, the official OpenAI client on the data port, and no static
// endpoint at all. Each test builds its own fleet; what they kill is real processes.
import { suite } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { groupAlive } from '../../src/agent/supervisor/index.js';
import { runCli } from '../support/cli.js';
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
  // What an operator reads: the tables, and an engine's output fetched from its node.
  const admin = ['--admin', fleet.server.admin];
  const table = await runCli(['ctl', 'replicas', '--model', 'chat', ...admin]);
  assert.is(table.code, 0, table.stderr);
  for (const r of ready) assert.match(table.stdout, r.id);
  const logs = await runCli(['ctl', 'logs', ready[0].id, '--tail', '5', ...admin]);
  assert.is(logs.code, 0, logs.stderr);
  assert.match(logs.stdout, /vllm \(sim\) serve \/models\/chat-8b as chat/);
  const nodesTable = await runCli(['ctl', 'nodes', ...admin]);
  assert.match(nodesTable.stdout, /node-a/);
  assert.match(nodesTable.stdout, /h100-80g/);
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
  // An agent process takes seconds to start on a loaded 2-core box: the expiry stages
  // here are long enough that its restart is over before the node could be lost.
  const fleet = (ctx.fleet = await startFleet(CHAT(2), { unreachable_after_ms: 8_000, lost_after_ms: 30_000 }));
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
  assert.not.match(fleet.server.stderr(), /"msg":"node lost"/);
});

spec('ctl drain moves a replica off a node, replacement first, with no failed request', async (ctx) => {
  const fleet = (ctx.fleet = await startFleet(CHAT(1)));
  await startNode(fleet, 'node-a');
  const [first] = await untilServing(fleet, 'chat', 1);
  // Launched with vLLM's limits for an H100 made explicit: the router counts from them, nothing to learn.
  const ep = ((await fleet.admin('GET', '/admin/v1/endpoints')).json as any[]).find((e) => e.id === first.id);
  assert.equal([ep?.batchCapacity, ep?.batchCapacityFrom], [1024, 'config'], JSON.stringify(ep));
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
  // Agents come back within 2 s of each other after a lost stream (their fast
  // reconnect window); the roster ends the settle period once both have.
  const fleet = (ctx.fleet = await startFleet(CHAT(2), { settle_ms: 6_000 }));
  await Promise.all([startNode(fleet, 'node-a'), startNode(fleet, 'node-b')]);
  const ids = (await untilServing(fleet, 'chat', 2)).map((r) => r.id).sort();
  const groups = new Map<string, number[]>();
  for (const n of fleet.nodes.values()) groups.set(n.name, await engineGroups(n));
  const load = streamLoad(fleet, 'chat', 4);
  await until(() => load.ok >= 8, 'traffic flowing', 10_000);
  await fleet.restartServer();
  const again = await untilServing(fleet, 'chat', 2);
  assert.equal(again.map((r) => r.id).sort(), ids, 'the same replicas');
  assert.ok(again.every((r) => r.recovered), 'recovered from the agents');
  const failedAtReturn = load.failed;
  const okAtReturn = load.ok;
  // Past the settle period, when placement may run: still exactly these two.
  await until(() => /"msg":"settle period over/.test(fleet.server.stderr()), 'settle period over', 10_000);
  await until(() => load.ok >= okAtReturn + 8, 'traffic after the restart', 10_000);
  await load.stop();
  console.log(`    server restart under load: ${load.ok} ok, ${load.failed} failed (${failedAtReturn} while it was down)`);
  assert.is(load.failed, failedAtReturn, `no failure once it was back: ${load.errors.join(' | ')}`);
  assert.equal((await replicas(fleet, 'chat')).map((r) => r.id).sort(), ids, 'no duplicate placed');
  assert.not.match(fleet.server.stderr(), /"msg":"replica placed"/, 'nothing placed by the new server');
  for (const n of fleet.nodes.values()) assert.equal(await engineGroups(n), groups.get(n.name), `${n.name}: no engine orphaned or replaced`);
});

spec('a scale-down by reload drains the extra replica with no failed request; a bad file on SIGHUP changes nothing', async (ctx) => {
  const fleet = (ctx.fleet = await startFleet(CHAT(2)));
  await Promise.all([startNode(fleet, 'node-a'), startNode(fleet, 'node-b')]);
  await untilServing(fleet, 'chat', 2);
  const load = streamLoad(fleet, 'chat', 4);
  await until(() => load.ok >= 8, 'traffic flowing', 10_000);
  fleet.rewrite(CHAT(1));
  const res = await fleet.admin('POST', '/admin/v1/reload');
  assert.is(res.status, 200);
  assert.equal(res.json.models, { added: [], removed: [], changed: ['chat'] });
  await until(async () => (await replicas(fleet, 'chat')).length === 1, 'one replica left', 30_000);
  await untilServing(fleet, 'chat', 1);
  const okAfter = load.ok;
  await until(() => load.ok >= okAfter + 4, 'traffic after the scale-down', 10_000);
  await load.stop();
  assert.is(load.failed, 0, load.errors.join(' | '));

  fleet.rewrite(CHAT(1).replace('tp: 1', 'tp: 0'));
  fleet.server.child.kill('SIGHUP');
  await until(() => /reload refused/.test(fleet.server.stderr()), 'the bad file refused', 10_000);
  assert.match(fleet.server.stderr(), /models\[0\]\.profiles\[0\]\.tp/);
  assert.is((await readyReplicas(fleet, 'chat')).length, 1, 'the running config stays');

  // A model added by a reload is placed, routed and counted under its own name.
  fleet.rewrite(`${CHAT(1)}
  - name: added
    aliases: [added-alias]
    profiles: [{ name: h100-tp1, engine: vllm, gpu_class: h100-80g, tp: 1 }]`);
  const again = await runCli(['ctl', 'reload', '--admin', fleet.server.admin]);
  assert.is(again.code, 0, again.stderr);
  assert.match(again.stdout, /added: added/);
  await untilServing(fleet, 'added', 1);
  const res2 = await fleet.openai().chat.completions.create({ model: 'added-alias', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 });
  assert.is(res2.model, 'added');
  // The request's record reaches the telemetry thread in a batch after the answer.
  await until(async () => /llmgw_requests_total\{[^}]*model="added"/.test(await (await fetch(`${fleet.server.admin}/metrics`)).text()), 'the added model counted under its own name');
});

const BIG = `  - name: big
    scaling: { min: 1, max: 1 }
    profiles:
      - { name: h100-tp16, engine: vllm, gpu_class: h100-80g, tp: 16, nodes: 2, launch_mode: mp, startup_timeout_ms: 30000 }`;

spec('a 2-node profile places on one fabric; a node of it killed, it is rebuilt on that fabric, never across two', async (ctx) => {
  const fleet = (ctx.fleet = await startFleet(BIG));
  const ibA = { fabrics: { 'ib-a': ['mlx5_0', 'mlx5_1', 'mlx5_2', 'mlx5_3'] } };
  const ibB = { fabrics: { 'ib-b': ['mlx5_0', 'mlx5_1', 'mlx5_2', 'mlx5_3'] } };
  await Promise.all([startNode(fleet, 'a1', ibA), startNode(fleet, 'a2', ibA), startNode(fleet, 'b1', ibB)]);
  const [first] = await untilServing(fleet, 'big', 1);
  assert.equal(first.shards.map((s: any) => s.node).sort(), ['a1', 'a2']);
  const res = await fleet.openai().chat.completions.create({ model: 'big', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 });
  assert.ok(res.choices.length === 1);
  // Only b1 would be left beside a survivor: the rebuild must wait for a node of ib-a.
  await stopNode(fleet.nodes.get('a2')!, true, 'SIGKILL');
  await until(async () => (await replicas(fleet, 'big')).every((r) => r.id !== first.id), 'the broken replica torn down', 20_000);
  const why = (await fleet.admin('GET', '/admin/v1/placement/big')).json;
  assert.is(why.placed, false);
  for (const f of ['ib-a', 'ib-b']) assert.ok(why.candidates.some((c: any) => c.fabric === f && c.code === 'fabric-too-small'), JSON.stringify(why.candidates));
  assert.is((await replicas(fleet, 'big')).length, 0, 'never placed across two fabrics');
  await startNode(fleet, 'a3', ibA);
  const [again] = await untilServing(fleet, 'big', 1);
  assert.equal(again.shards.map((s: any) => s.node).sort(), ['a1', 'a3']);
});

spec('explain-placement names every candidate of an unplaceable model and why', async (ctx) => {
  const fleet = (ctx.fleet = await startFleet(`${CHAT(1)}
  - name: huge
    profiles:
      - { name: a100-tp8, engine: vllm, gpu_class: a100-80g, tp: 8 }
      - { name: h100-tp16, engine: vllm, gpu_class: h100-80g, tp: 16, nodes: 2, launch_mode: mp }`));
  await Promise.all([startNode(fleet, 'node-a'), startNode(fleet, 'node-b')]);
  await untilServing(fleet, 'chat', 1);
  const res = await runCli(['ctl', 'explain-placement', 'huge', '--admin', fleet.server.admin, '--json']);
  assert.is(res.code, 0, res.stderr);
  const why = JSON.parse(res.stdout);
  assert.is(why.model, 'huge');
  assert.is(why.placed, false);
  for (const node of ['node-a', 'node-b']) assert.ok(why.candidates.some((c: any) => c.node === node && c.profile === 'a100-tp8' && /a100-80g/.test(c.reason)), `${node} × a100-tp8: ${res.stdout}`);
  // Neither node labels a fabric: the two-node profile has nowhere to go, and says so.
  assert.ok(why.candidates.some((c: any) => c.profile === 'h100-tp16' && c.reason.length > 0), res.stdout);
  const table = await runCli(['ctl', 'explain-placement', 'huge', '--admin', fleet.server.admin]);
  assert.match(table.stdout, /a100-tp8/);
  assert.match(table.stdout, /h100-tp16/);
  const models = await runCli(['ctl', 'models', '--admin', fleet.server.admin]);
  assert.match(models.stdout, /huge/);
  assert.match(models.stdout, /cannot place/);
});

spec.run();
