import { closeSync, existsSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from '../../support/uvu.js';
import * as assert from 'uvu/assert';
import { request } from 'undici';
import { groupAlive, readFingerprint, signalGroup, spawnGroup, type ShardRecord } from '../../../src/agent/supervisor/index.js';
import { until } from '../../support/until.js';
import { Harness, reaped, engineSpec, fixture, freePort } from './helpers.js';

const spec = suite<{ h: Harness }>('adoption after an agent restart');

spec.after.each(async (ctx) => {
  await ctx.h.cleanup();
});


/** A supervisor running one ready engine `eng`; returns its port and process group. */
async function readyEngine(ctx: { h: Harness }): Promise<{ port: number; pgid: number }> {
  ctx.h = await new Harness().open();
  const port = await freePort();
  ctx.h.sup.start('eng', engineSpec(port));
  await ctx.h.reach('eng', 'ready');
  return { port, pgid: ctx.h.status('eng')!.processes[0]!.pgid };
}

const recordPath = (h: Harness): string => join(h.stateDir, 'eng.json');
const readRecord = (h: Harness): ShardRecord => JSON.parse(readFileSync(recordPath(h), 'utf8')) as ShardRecord;

spec('a restarted agent adopts a live engine after a health check, and can then stop it for real', async (ctx) => {
  const { port, pgid } = await readyEngine(ctx);
  await ctx.h.restart();
  assert.equal(ctx.h.recovery, { adopted: ['eng'], failed: [], orphanGroups: [] });
  await ctx.h.reach('eng', 'ready');
  assert.equal(ctx.h.states('eng'), ['loading', 'ready']);
  const s = ctx.h.status('eng')!;
  assert.ok(s.adopted);
  assert.is(s.processes[0]!.pgid, pgid, 'the same engine, not a new one');
  assert.is((await request(`http://127.0.0.1:${port}/v1/models`)).statusCode, 200);

  const final = await ctx.h.sup.stop('eng').done;
  assert.is(final.state, 'stopped');
  assert.not.ok(groupAlive(pgid), 'the adopted engine was signalled and is gone, not just reported stopped');
  assert.not.ok(existsSync(recordPath(ctx.h)));
});

spec('an adopted engine that dies is noticed by polling and fails with the output it printed before the restart', async (ctx) => {
  const { pgid } = await readyEngine(ctx);
  await ctx.h.restart();
  await ctx.h.reach('eng', 'ready');
  signalGroup(pgid, 'SIGKILL');
  const failed = await ctx.h.reach('eng', 'failed');
  // What the teardown found may follow after '; ' (on a loaded machine, a group slow to reap).
  assert.match(failed.reason!, /^engine \S+ \(pid \d+\) exited \(adopted, so its exit status is unknown: pid \d+ is gone\)(;|$)/, failed.reason!);
  assert.ok(failed.tail!.some((l) => l.includes('INFO serving on')), failed.tail!.join('\n'));
});

spec('a recorded pid that now belongs to another process (pid reuse) is left alone, and its record dropped', async (ctx) => {
  ctx.h = await new Harness().open();
  // A process the agent never started, recorded under a start time that is not its own.
  const fd = openSync(join(ctx.h.dir, 'stranger.log'), 'w');
  const stranger = await spawnGroup({ argv: [process.execPath, fixture('forker.mjs')], env: {}, outputFd: fd });
  closeSync(fd);
  stranger.unref();
  ctx.h.track(stranger.pid!);
  const now = readFingerprint(stranger.pid!)!;
  ctx.h.sup.start('eng', engineSpec(await freePort()));
  await ctx.h.reach('eng', 'ready');
  const real = readRecord(ctx.h);
  await ctx.h.sup.stop('eng').done;
  writeFileSync(recordPath(ctx.h), JSON.stringify({ ...real, processes: [{ ...now, startTime: String(BigInt(now.startTime) - 1n) }] }));

  await ctx.h.restart();
  assert.equal(ctx.h.recovery.failed, ['eng']);
  assert.ok(groupAlive(stranger.pid!), 'the stranger was not signalled');
  assert.not.ok(existsSync(recordPath(ctx.h)), 'the record is dropped');
  const s = ctx.h.status('eng')!;
  assert.is(s.state, 'failed');
  assert.match(s.reason!, new RegExp(`part of it is gone: pid ${stranger.pid} was reused`));
  signalGroup(stranger.pid!, 'SIGKILL');
  await until(() => !groupAlive(stranger.pid!), 'the stranger gone');
});

spec('an engine whose record cannot be read any more is killed: nothing could describe it to the control plane', async (ctx) => {
  const { pgid } = await readyEngine(ctx);
  const record = readRecord(ctx.h);
  await ctx.h.sup.release();
  writeFileSync(recordPath(ctx.h), JSON.stringify({ ...record, spec: { replica: 42 } }));

  await ctx.h.open();
  assert.equal(ctx.h.recovery.failed, ['eng']);
  assert.not.ok(groupAlive(pgid), 'the unidentifiable engine is gone');
  const failed = ctx.h.events.find((e) => e.id === 'eng' && e.state === 'failed')!;
  assert.match(failed.reason!, /cannot be identified: the spec is unusable: .*replica: must be a string, got 42/);
  assert.match(failed.reason!, new RegExp(`process group ${pgid} stopped`));
  assert.ok(failed.tail!.length > 0, 'with the output it left');
});

spec('the orphan scan at start kills processes the agent started that no state file accounts for', async (ctx) => {
  const { pgid } = await readyEngine(ctx);
  await ctx.h.sup.release();
  rmSync(recordPath(ctx.h)); // as if the agent died between spawning and recording

  await ctx.h.open();
  assert.equal(ctx.h.recovery, { adopted: [], failed: [], orphanGroups: [pgid] });
  await until(() => !groupAlive(pgid), 'orphan gone');
});

spec('a record from before a reboot matches nothing and signals nothing', async (ctx) => {
  const { pgid } = await readyEngine(ctx);
  const record = readRecord(ctx.h);
  await ctx.h.sup.release();
  writeFileSync(recordPath(ctx.h), JSON.stringify({ ...record, bootId: 'another-boot' }));
  await ctx.h.open();
  assert.equal(ctx.h.recovery.failed, ['eng']);
  // Not signalled as a recorded process; the orphan scan, which reads its environment
  // (not the record), is what finds this one.
  assert.equal(ctx.h.recovery.orphanGroups, [pgid]);
});

spec('no process outlives the suite: kill(-pgid, 0) finds no group any spec started', async () => {
  await reaped(Harness.everSeen);
});

spec.run();
