// Timeouts here are seconds, not hundreds of ms: on a loaded 2-core machine the fake engine
// can take that long to listen, and the spec would then read another failure than it pins.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from '../../support/uvu.js';
import { until } from '../../support/until.js';
import * as assert from 'uvu/assert';
import { request } from 'undici';
import { groupAlive, parseProcStat, signalGroup, type ShardRecord } from '../../../src/agent/supervisor/index.js';
import { Harness, reaped, TIMING, engineSpec, executable, fixture, freePort, rayRankSpec } from './helpers.js';

const spec = suite<{ h: Harness }>('shard lifecycle');

spec.after.each(async (ctx) => {
  await ctx.h.cleanup();
});


async function models(port: number): Promise<string[]> {
  const res = await request(`http://127.0.0.1:${port}/v1/models`);
  const body = (await res.body.json()) as { data: { id: string }[] };
  return body.data.map((m) => m.id);
}

spec('a shard is ready only once the leader /v1/models lists the served name', async (ctx) => {
  ctx.h = await new Harness().open();
  const port = await freePort();
  ctx.h.sup.start('eng', engineSpec(port, { env: { FAKE_VLLM_LOAD_MS: '200' } }));
  await ctx.h.reach('eng', 'ready');
  assert.equal(ctx.h.states('eng'), ['starting', 'loading', 'ready']);
  assert.equal(await models(port), ['llama-3.1-8b']);
  const s = ctx.h.status('eng')!;
  assert.is(s.processes.length, 1);
  assert.is(s.processes[0]!.role, 'engine');
  assert.is(s.processes[0]!.pgid, s.processes[0]!.pid, 'the engine leads its own process group');
});

spec('an engine that is up but serves another name never becomes ready: it fails with the reason and its output', async (ctx) => {
  ctx.h = await new Harness({ ...TIMING, readyTimeoutMs: 2_500 }).open();
  const port = await freePort();
  ctx.h.sup.start('eng', engineSpec(port, { env: { FAKE_VLLM_SERVE_AS: 'some-other-model' } }));
  const loading = await ctx.h.reach('eng', 'loading');
  const failed = await ctx.h.reach('eng', 'failed');
  assert.ok(failed.at - loading.at >= 2_500, 'it was given the whole ready timeout');
  assert.not.ok(ctx.h.states('eng').includes('ready'));
  assert.match(failed.reason!, /not ready within 2500 ms: .*does not list llama-3\.1-8b \(lists some-other-model\)/);
  assert.ok(failed.tail!.some((l) => l.includes('INFO serving on')), failed.tail!.join('\n'));
});

spec('an engine that dies while loading fails the shard, the report carries its last output', async (ctx) => {
  ctx.h = new Harness();
  ctx.h.launch = { ...ctx.h.launch, vllm: executable(ctx.h.dir, 'vllm-oom', fixture('crash-while-loading.mjs')) };
  await ctx.h.open();
  ctx.h.sup.start('eng', engineSpec(await freePort()));
  const failed = await ctx.h.reach('eng', 'failed');
  assert.match(failed.reason!, /^engine \S+vllm-oom \(pid \d+\) exited with code 3$/);
  assert.equal(failed.tail, [
    'INFO loading weights shard 1/4',
    'INFO loading weights shard 2/4',
    'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB',
  ]);
  const s = ctx.h.status('eng')!;
  assert.is(s.state, 'failed');
  assert.equal(s.tail, failed.tail, 'the failed status keeps the tail for the operator');
  assert.not.ok(existsSync(join(ctx.h.stateDir, 'eng.json')), 'the state file is gone with the shard');
});

spec('ranks start leader first: a worker waits for the rendezvous, then joins and is ready by staying up', async (ctx) => {
  ctx.h = await new Harness().open();
  const leaderPort = await freePort();
  ctx.h.sup.start('rank1', rayRankSpec(1, await freePort(), leaderPort));
  await ctx.h.reach('rank1', 'starting');
  assert.match(ctx.h.status('rank1')!.reason!, new RegExp(`waiting for rendezvous 127\\.0\\.0\\.1:${leaderPort}`));
  assert.is(ctx.h.status('rank1')!.processes.length, 0, 'the worker is held until its leader listens');

  const httpPort = await freePort();
  ctx.h.sup.start('rank0', rayRankSpec(0, httpPort, leaderPort));
  await ctx.h.reach('rank0', 'ready');
  await ctx.h.reach('rank1', 'ready');
  const leader = ctx.h.status('rank0')!;
  assert.equal(leader.processes.map((p) => p.role), ['sidecar', 'engine']);
  assert.equal(await models(httpPort), ['llama-3.1-8b']);
  // Ready means up for the settle time, which a process slow to start (a loaded host) can
  // reach before its first line is through the output log: wait for the line itself.
  const log = join(ctx.h.stateDir, 'rank1.log');
  await until(() => existsSync(log) && readFileSync(log, 'utf8').includes(`fake ray worker joined 127.0.0.1:${leaderPort}`), 'the worker joining its leader, in its log');
});

spec('a sidecar that dies fails the shard whole: its engine is stopped before the failure is reported', async (ctx) => {
  ctx.h = await new Harness().open();
  ctx.h.sup.start('rank0', rayRankSpec(0, await freePort(), await freePort()));
  await ctx.h.reach('rank0', 'ready');
  const [head, engine] = ctx.h.status('rank0')!.processes;
  signalGroup(head!.pgid, 'SIGKILL');
  const failed = await ctx.h.reach('rank0', 'failed');
  assert.match(failed.reason!, /^sidecar \S+\/ray \(pid \d+\) was killed by SIGKILL, and a shard fails whole$/);
  assert.not.ok(groupAlive(engine!.pgid), 'the engine was stopped, before the failure was reported');
  assert.not.ok(groupAlive(head!.pgid));
});

spec('a rendezvous that never accepts fails the shard with the reason, instead of hanging it', async (ctx) => {
  ctx.h = new Harness();
  ctx.h.launch = { ...ctx.h.launch, rendezvousTimeoutMs: 1_000 };
  await ctx.h.open();
  const leaderPort = await freePort();
  ctx.h.sup.start('rank1', rayRankSpec(1, await freePort(), leaderPort));
  const failed = await ctx.h.reach('rank1', 'failed');
  assert.match(failed.reason!, new RegExp(`^rendezvous 127\\.0\\.0\\.1:${leaderPort} did not accept a connection within 1000 ms \\(last attempt: ECONNREFUSED\\); is the leader rank running\\?$`), `the reason was: ${failed.reason}`);
  assert.equal(ctx.h.states('rank1'), ['starting', 'failed']);
  assert.is(ctx.h.status('rank1')!.processes.length, 0, 'the worker was never started');
});

spec('stop drains, stops every group of the shard, sidecars included, and removes its files', async (ctx) => {
  ctx.h = await new Harness().open();
  ctx.h.sup.start('rank0', rayRankSpec(0, await freePort(), await freePort()));
  await ctx.h.reach('rank0', 'ready');
  const groups = ctx.h.status('rank0')!.processes.map((p) => p.pgid);
  const { status, done } = ctx.h.sup.stop('rank0');
  assert.is(status.state, 'draining', 'draining is reported at once');
  const final = await done;
  assert.is(final.state, 'stopped');
  assert.equal(ctx.h.states('rank0').slice(-2), ['draining', 'stopped']);
  for (const g of groups) assert.not.ok(groupAlive(g), `group ${g} is gone`);
  assert.not.ok(existsSync(join(ctx.h.stateDir, 'rank0.json')));
  assert.not.ok(existsSync(join(ctx.h.stateDir, 'rank0.log')));
  assert.equal(ctx.h.sup.list(), [], 'a stopped shard is forgotten');
});

spec('stopping a ready shard lets its requests in flight finish before the engine is signalled', async (ctx) => {
  ctx.h = await new Harness().open();
  const port = await freePort();
  ctx.h.sup.start('eng', engineSpec(port, { env: { FAKE_VLLM_SPEED: '4' } }));
  await ctx.h.reach('eng', 'ready');
  const res = await request(`http://127.0.0.1:${port}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'llama-3.1-8b', prompt: 'Tell me a long story', max_tokens: 80, stream: true, ignore_eos: true }),
  });
  const body = res.body[Symbol.asyncIterator]();
  await body.next(); // the first chunk: the request is in flight now

  const { done } = ctx.h.sup.stop('eng');
  let text = '';
  for (let c = await body.next(); !c.done; c = await body.next()) text += String(c.value);
  const finished = Date.now();
  const final = await done;
  assert.match(text, /data: \[DONE\]\s*$/, 'the request ran to its end, not cut by the stop');
  assert.is(final.state, 'stopped');
  assert.is(final.reason, null, 'nothing was left when the engine was signalled');
  assert.ok(ctx.h.events.find((e) => e.state === 'stopped')!.at >= finished);
});

spec('stop during the rendezvous wait cancels the start: nothing is started afterwards', async (ctx) => {
  ctx.h = await new Harness().open();
  ctx.h.sup.start('rank1', rayRankSpec(1, await freePort(), await freePort()));
  await ctx.h.reach('rank1', 'starting');
  const final = await ctx.h.sup.stop('rank1').done;
  assert.is(final.state, 'stopped');
  assert.is(final.processes.length, 0);
});

spec('the state file holds the spec, the launch and a fingerprint of every process', async (ctx) => {
  ctx.h = await new Harness().open();
  const s = engineSpec(await freePort());
  ctx.h.sup.start('eng', s);
  await ctx.h.reach('eng', 'ready');
  const record = JSON.parse(readFileSync(join(ctx.h.stateDir, 'eng.json'), 'utf8')) as ShardRecord;
  assert.equal(record.spec, s);
  assert.is(record.launch.commands[0]!.argv[1], 'serve');
  assert.equal(record.launch.healthCheck, { url: `http://127.0.0.1:${s.httpPort}/v1/models`, servedName: 'llama-3.1-8b' });
  const [fp] = record.processes;
  const stat = parseProcStat(readFileSync(`/proc/${fp!.pid}/stat`, 'utf8'))!;
  assert.is(fp!.startTime, stat.startTime);
  assert.is(fp!.pgid, fp!.pid);
  assert.equal(fp!.cmdline, readFileSync(`/proc/${fp!.pid}/cmdline`, 'utf8').split('\0').slice(0, -1));
  assert.is(record.bootId, readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim());
});

spec('the same spec again is answered with its status; a different one under a live id is a conflict', async (ctx) => {
  ctx.h = await new Harness().open();
  const s = engineSpec(await freePort());
  assert.is(ctx.h.sup.start('eng', s).created, true);
  const again = ctx.h.sup.start('eng', JSON.parse(JSON.stringify({ ...s, model: s.model })));
  assert.is(again.created, false);
  assert.throws(() => ctx.h.sup.start('eng', { ...s, servedName: 'other' }), (e: { code: string }) => e.code === 'LLMGW_SHARD_CONFLICT');
  assert.throws(() => ctx.h.sup.start('../etc', s), /shard id/);
  assert.throws(() => ctx.h.sup.start('bad', { ...s, tp: 2 }), (e: { code: string; message: string }) => e.code === 'LLMGW_SHARD_INVALID' && /each node needs 2/.test(e.message));
  await ctx.h.reach('eng', 'ready');
});

spec('no process outlives the suite: kill(-pgid, 0) finds no group any spec started', async () => {
  await reaped(Harness.everSeen);
});

spec.run();
