// `llmgw run --role=agent` end to end: the real CLI, its control interface over HTTP, and
// the sim engine behind the vLLM adapter as the engine it supervises.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { request } from 'undici';
import { RunCommand } from '../../src/cli/commands/run.js';
import { findOrphans, groupAlive } from '../../src/agent/supervisor/index.js';
import type { ShardStatus } from '../../src/messages/agent.js';
import { runInProcess } from '../support/cli.js';
import { startProcess, type Started } from '../support/process.js';
import { until } from '../support/until.js';
import { engineSpec, executable, fixture, freePort, reaped, tempDir, trackGroup } from '../agent/supervisor/helpers.js';

interface Ctx {
  dir: string;
  stateDir: string;
  config: string;
  agent: Started | undefined;
  url: string;
  groups: Set<number>;
}

const spec = suite<Ctx>('agent role');

spec.before((ctx) => {
  ctx.dir = tempDir('llmgw-agent-role-');
  ctx.stateDir = join(ctx.dir, 'state');
  ctx.config = join(ctx.dir, 'agent.yaml');
  ctx.groups = new Set();
  mkdirSync(join(ctx.dir, 'no-ib')); // an empty InfiniBand root: a node without adapters
  writeFileSync(
    ctx.config,
    [
      'listen: "127.0.0.1:0"',
      `state_dir: ${JSON.stringify(ctx.stateDir)}`,
      'no_gpu: true',
      `ib_root: ${JSON.stringify(join(ctx.dir, 'no-ib'))}`,
      'stop_timeout_ms: 2000',
      'health_interval_ms: 25',
      'watch_interval_ms: 25',
      'ready_timeout_ms: 10000',
      `engines: { vllm: ${JSON.stringify(executable(ctx.dir, 'vllm', fixture('fake-vllm.mjs')))} }`,
    ].join('\n') + '\n',
  );
});

spec.after(async (ctx) => {
  await ctx.agent?.stop();
});

async function startAgent(ctx: Ctx): Promise<void> {
  ctx.agent = await startProcess(['run', '--role=agent', '--config', ctx.config], { waitFor: /^llmgw agent listening on (\S+)$/ });
  ctx.url = ctx.agent.match[1]!;
}

async function call(ctx: Ctx, method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const res = await request(`${ctx.url}${path}`, { method: method as 'GET', body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.statusCode, json: await res.body.json() };
}

const shards = async (ctx: Ctx): Promise<ShardStatus[]> => (await call(ctx, 'GET', '/agent/v1/shards')).json as ShardStatus[];

spec('the control interface answers inventory, and refuses what it cannot do with a reason', async (ctx) => {
  await startAgent(ctx);
  const inv = await call(ctx, 'GET', '/agent/v1/inventory');
  assert.is(inv.status, 200);
  assert.equal(inv.json.gpus, []);
  assert.equal(inv.json.hcas, []);

  const bad = await call(ctx, 'PUT', '/agent/v1/shards/bad', { ...engineSpec(1), tp: 'four' });
  assert.is(bad.status, 400);
  assert.is(bad.json.error.code, 'shard_invalid');
  assert.match(bad.json.error.message, 'tp: must be an integer, got "four"');
  assert.is((await call(ctx, 'DELETE', '/agent/v1/shards/nope')).status, 404);
  assert.is((await call(ctx, 'POST', '/agent/v1/shards')).status, 405);
  assert.equal(await shards(ctx), []);
});

spec('PUT starts a shard (idempotently); SIGTERM leaves the engine serving; the next agent adopts it and DELETE stops it for real', async (ctx) => {
  const port = await freePort();
  const shardSpec = engineSpec(port);
  const created = await call(ctx, 'PUT', '/agent/v1/shards/llama-1-r0', shardSpec);
  assert.is(created.status, 201);
  assert.is((await call(ctx, 'PUT', '/agent/v1/shards/llama-1-r0', shardSpec)).status, 200, 'a retried command starts nothing new');
  assert.is((await call(ctx, 'PUT', '/agent/v1/shards/llama-1-r0', { ...shardSpec, servedName: 'other' })).status, 409);

  await until(async () => (await shards(ctx))[0]?.state === 'ready', 'shard ready', 10_000);
  const [ready] = await shards(ctx);
  const pgid = ready!.processes[0]!.pgid;
  ctx.groups.add(pgid);
  trackGroup(pgid);

  await ctx.agent!.stop();
  assert.ok(groupAlive(pgid), 'the engine outlives its agent');
  assert.is((await request(`http://127.0.0.1:${port}/v1/models`)).statusCode, 200, 'and keeps serving');

  await startAgent(ctx);
  const [found] = await shards(ctx);
  assert.ok(found!.adopted, 'the port opens after recovery: the engine is adopted already');
  assert.is(found!.processes[0]!.pgid, pgid, 'the same engine, not a second one');
  await until(async () => (await shards(ctx))[0]?.state === 'ready', 'adopted shard ready after its health check', 10_000);

  const deleted = await call(ctx, 'DELETE', '/agent/v1/shards/llama-1-r0');
  assert.is(deleted.status, 202);
  assert.is(deleted.json.state, 'draining');
  await until(async () => (await shards(ctx)).length === 0, 'shard gone', 10_000);
  assert.not.ok(groupAlive(pgid), 'the adopted engine was stopped for real');
});

spec('a control interface that is not on loopback is refused at start', async (ctx) => {
  const r = await runInProcess([RunCommand], ['run', '--role=agent', '--config', ctx.config, '--listen', '0.0.0.0:4100']);
  assert.is(r.code, 2);
  assert.match(r.stderr, /listen: must be a loopback address .*not 0\.0\.0\.0: the control interface has no authentication and starts processes/);
});

spec('a node that cannot run nvidia-smi fails at start and points at no_gpu in its config', async (ctx) => {
  const config = join(ctx.dir, 'gpu.yaml');
  const missing = join(ctx.dir, 'bin', 'nvidia-smi');
  writeFileSync(config, readFileSync(ctx.config, 'utf8').replace('no_gpu: true', `no_gpu: false\nnvidia_smi: ${JSON.stringify(missing)}`));
  const r = await runInProcess([RunCommand], ['run', '--role=agent', '--config', config]);
  assert.is(r.code, 2);
  assert.is(r.stderr, `llmgw: nvidia-smi not found at ${missing}: set no_gpu: true in ${config} on a node without GPUs, or nvidia_smi in ${config} with its path\n`);
});

spec('an ib_root that does not exist fails at start; an empty one is a node without adapters', async (ctx) => {
  const config = join(ctx.dir, 'ib.yaml');
  const typo = join(ctx.dir, 'no-ibb');
  writeFileSync(config, readFileSync(ctx.config, 'utf8').replace(JSON.stringify(join(ctx.dir, 'no-ib')), JSON.stringify(typo)));
  const r = await runInProcess([RunCommand], ['run', '--role=agent', '--config', config]);
  assert.is(r.code, 2);
  assert.is(r.stderr, `llmgw: InfiniBand root ${typo} does not exist: check ib_root in ${config} (normally /sys/class/infiniband; an empty directory means no adapters)\n`);
});

spec('no process outlives the suite: kill(-pgid, 0) finds no group the agents started', async (ctx) => {
  await ctx.agent?.stop();
  for (const o of findOrphans(ctx.stateDir, new Set())) ctx.groups.add(o.pgid);
  await reaped(ctx.groups);
  rmSync(ctx.dir, { recursive: true, force: true });
});

spec.run();
