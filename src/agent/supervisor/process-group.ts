// Every command of a shard leads its own process group, and the group, not the pid, is
// what gets signalled: engines fork workers (vLLM's EngineCore and GPU workers, Ray's
// raylet) that hold GPU memory and outlive a signal sent to the leader alone. The next
// engine placed on those GPUs would then fail to allocate, with an error naming itself.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { LlmgwError } from '../../errors.js';
import { pidsInGroups, readFingerprint } from './fingerprint.js';

/**
 * A pgid that may be signalled. `kill(-1)` signals every process the agent may signal and
 * `kill(-0)` the agent's own group, so a corrupt state file must never get that far.
 */
export function assertGroupId(pgid: number): void {
  if (!Number.isInteger(pgid) || pgid <= 1) throw new LlmgwError('LLMGW_HANDLER_FAILED', `refusing to signal process group ${String(pgid)}`);
}

/**
 * Whether any living process of the group is left. `kill(-pgid, 0)` answers for zombies
 * too: members that exited and wait for a parent to reap them. A zombie holds no memory,
 * GPU or port, and an orphaned one waits on init, which on some hosts reaps only every
 * second or so; so when the signal finds someone, the group's members are read from
 * /proc (the leader first: while it lives, one read settles it).
 */
export function groupAlive(pgid: number): boolean {
  assertGroupId(pgid);
  try {
    process.kill(-pgid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  if (readFingerprint(pgid)?.pgid === pgid) return true;
  return pidsInGroups(new Set([pgid])).size > 0;
}

/** Sends `signal` to the whole group; false when the group is already gone. */
export function signalGroup(pgid: number, signal: NodeJS.Signals): boolean {
  assertGroupId(pgid);
  try {
    process.kill(-pgid, signal);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw err;
  }
}

export interface StopGroupOptions {
  /** How long the group gets after SIGTERM to exit on its own (engines free GPU memory). */
  readonly timeoutMs: number;
  /** How long SIGKILL may take to empty the group before it is reported as surviving. */
  readonly killWaitMs?: number;
  readonly pollMs?: number;
}

/**
 * SIGTERM to the group, SIGKILL to the group after `timeoutMs`, and returns only once no
 * process of the group is left: `'exited'` when SIGTERM sufficed, `'killed'` when SIGKILL
 * was needed. Throws LLMGW_PROCESS_SURVIVED when even SIGKILL leaves members behind (a
 * process stuck in uninterruptible sleep on a hung GPU driver).
 *
 * "Gone" is no living member left (see groupAlive).
 */
export async function stopGroup(pgid: number, opts: StopGroupOptions): Promise<'exited' | 'killed'> {
  const pollMs = opts.pollMs ?? 20;
  if (!signalGroup(pgid, 'SIGTERM')) return 'exited';
  if (await gone(pgid, opts.timeoutMs, pollMs)) return 'exited';
  signalGroup(pgid, 'SIGKILL');
  const killWaitMs = opts.killWaitMs ?? 5_000;
  if (await gone(pgid, killWaitMs, pollMs)) return 'killed';
  throw new LlmgwError('LLMGW_PROCESS_SURVIVED', `process group ${pgid} still has processes ${killWaitMs} ms after SIGKILL (stuck in the kernel? check for D-state processes)`, { pgid });
}

async function gone(pgid: number, withinMs: number, pollMs: number): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    if (!groupAlive(pgid)) return true;
    if (Date.now() >= deadline) return false;
    await sleep(pollMs);
  }
}

export interface GroupSpawn {
  readonly argv: readonly string[];
  /** Laid over the agent's own environment. */
  readonly env: Readonly<Record<string, string>>;
  /** A file descriptor that receives stdout and stderr, merged as the process writes them. */
  readonly outputFd: number;
}

/**
 * Starts a process as the leader of a new process group (and session: Node's `detached`
 * is setsid), so its pgid is its pid. Its output goes to a file, not a pipe: engines
 * outlive an agent restart, and a pipe to a dead agent would break the engine's next write.
 * Resolves once the process runs; rejects with LLMGW_SPAWN_FAILED when it cannot start.
 */
export async function spawnGroup(cmd: GroupSpawn): Promise<ChildProcess> {
  const [file, ...args] = cmd.argv;
  if (file === undefined) throw new LlmgwError('LLMGW_SPAWN_FAILED', 'a command with no argv cannot be started');
  const child = spawn(file, args, {
    detached: true,
    stdio: ['ignore', cmd.outputFd, cmd.outputFd],
    env: { ...process.env, ...cmd.env },
  });
  try {
    await once(child, 'spawn');
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new LlmgwError('LLMGW_SPAWN_FAILED', `cannot start ${file}: ${e.code ?? e.message}`, { file, errno: e.code });
  }
  return child;
}
