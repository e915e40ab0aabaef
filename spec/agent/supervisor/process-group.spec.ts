import { closeSync, openSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { test } from '../../support/uvu.js';
import * as assert from 'uvu/assert';
import { groupAlive, readFingerprint, signalGroup, spawnGroup, stopGroup } from '../../../src/agent/supervisor/index.js';
import { until } from '../../support/until.js';
import { fixture, reaped, tempDir, trackGroup } from './helpers.js';

const groups: number[] = [];
const dir = tempDir();
let outputs = 0;
/** Running, not merely a zombie waiting for init to reap it. */
const pidAlive = (pid: number): boolean => readFingerprint(pid) !== null;

/** Starts forker.mjs in its own group; resolves with its pid, its grandchild's pid and its output path. */
async function startForker(...args: string[]): Promise<{ pid: number; grandchild: number; out: string }> {
  const out = join(dir, `out-${outputs++}.log`);
  const fd = openSync(out, 'w');
  const child = await spawnGroup({ argv: [process.execPath, fixture('forker.mjs'), ...args], env: {}, outputFd: fd });
  closeSync(fd);
  child.unref();
  groups.push(child.pid!);
  trackGroup(child.pid!);
  let m: RegExpMatchArray | null = null;
  await until(() => (m = /pid=(\d+) grandchild=(\d+)/.exec(readFileSync(out, 'utf8'))) !== null, 'forker printed its pids');
  return { pid: Number(m![1]), grandchild: Number(m![2]), out };
}

test('stop kills the whole process group, the grandchild an engine forked included', async () => {
  const { pid, grandchild } = await startForker();
  assert.ok(pidAlive(grandchild), 'the grandchild runs before the stop');
  const how = await stopGroup(pid, { timeoutMs: 2_000 });
  assert.is(how, 'exited');
  assert.not.ok(groupAlive(pid), 'no living process is left in the group');
  assert.not.ok(pidAlive(grandchild), 'the grandchild, which would hold GPU memory, is gone');
});

test('a group that ignores SIGTERM gets SIGKILL after stop_timeout, and only then', async () => {
  const { pid, grandchild, out } = await startForker('--ignore-sigterm');
  const started = Date.now();
  const how = await stopGroup(pid, { timeoutMs: 300 });
  const took = Date.now() - started;
  assert.is(how, 'killed');
  assert.ok(took >= 300, `SIGKILL came after the timeout, not before (${took} ms)`);
  assert.match(readFileSync(out, 'utf8'), 'SIGTERM ignored', 'SIGTERM was sent first');
  assert.not.ok(groupAlive(pid));
  assert.not.ok(pidAlive(grandchild));
});

test('stopping a group that is already gone is not an error', async () => {
  const { pid } = await startForker();
  signalGroup(pid, 'SIGKILL');
  await until(() => !groupAlive(pid), 'group gone');
  assert.is(await stopGroup(pid, { timeoutMs: 100 }), 'exited');
});

test('pgid 0 and 1 are refused: kill(-0) is our own group, kill(-1) is everyone', () => {
  assert.throws(() => signalGroup(0, 'SIGTERM'), /refusing/);
  assert.throws(() => signalGroup(1, 'SIGTERM'), /refusing/);
  assert.throws(() => groupAlive(-5), /refusing/);
});

test('a missing binary is LLMGW_SPAWN_FAILED naming it', async () => {
  const fd = openSync(join(dir, 'missing-binary.log'), 'w');
  try {
    await spawnGroup({ argv: ['/nonexistent/vllm', 'serve'], env: {}, outputFd: fd });
    assert.unreachable('spawned');
  } catch (err) {
    assert.is((err as { code: string }).code, 'LLMGW_SPAWN_FAILED');
    assert.match((err as Error).message, /\/nonexistent\/vllm: ENOENT/);
  } finally {
    closeSync(fd);
  }
});

test('no process outlives the suite: kill(-pgid, 0) finds no group any spec started', async () => {
  await reaped(groups);
  rmSync(dir, { recursive: true, force: true });
});

test.run();
