// Who a pid is. Pids are reused, and adopting (or killing) an unrelated process that got
// an engine's old pid is worse than leaking the engine, so a recorded process is only
// ever signalled again when the kernel still describes it the same way: same boot, same
// start time (clock ticks after boot, /proc/<pid>/stat field 22, fixed at fork), same
// process group, same command line.
import { readFileSync, readdirSync } from 'node:fs';

export interface ProcessFingerprint {
  readonly pid: number;
  readonly pgid: number;
  /** /proc/<pid>/stat field 22, as text: it can exceed 2^53 on a long-running box. */
  readonly startTime: string;
  readonly cmdline: readonly string[];
}

interface ProcStat {
  readonly state: string;
  readonly pgid: number;
  readonly startTime: string;
}

/** Parses /proc/<pid>/stat. `comm` (field 2) may hold spaces and parentheses, so fields are counted from the last ')'. */
export function parseProcStat(text: string): ProcStat | null {
  const close = text.lastIndexOf(')');
  if (close < 0) return null;
  const f = text.slice(close + 2).trim().split(' '); // f[0] is field 3
  const state = f[0];
  const pgid = Number(f[2]);
  const startTime = f[19];
  if (state === undefined || !Number.isInteger(pgid) || startTime === undefined || !/^\d+$/.test(startTime)) return null;
  return { state, pgid, startTime };
}

function readStat(pid: number): ProcStat | null {
  try {
    return parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return null;
  }
}

/** The process as the kernel describes it now; null when there is no such (living) process. */
export function readFingerprint(pid: number): ProcessFingerprint | null {
  const stat = readStat(pid);
  // A zombie has exited; only its exit status is left for its parent to collect.
  if (stat === null || stat.state === 'Z') return null;
  let cmdline: string[];
  try {
    cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch {
    return null;
  }
  if (cmdline.at(-1) === '') cmdline.pop();
  return { pid, pgid: stat.pgid, startTime: stat.startTime, cmdline };
}

/** Why `now` is not the recorded process, or null when it is. */
export function fingerprintMismatch(recorded: ProcessFingerprint, now: ProcessFingerprint | null): string | null {
  if (now === null) return `pid ${recorded.pid} is gone`;
  if (now.startTime !== recorded.startTime) return `pid ${recorded.pid} was reused (started at tick ${now.startTime}, not ${recorded.startTime})`;
  if (now.pgid !== recorded.pgid) return `pid ${recorded.pid} is in process group ${now.pgid}, not ${recorded.pgid}`;
  if (now.cmdline.join('\0') !== recorded.cmdline.join('\0')) return `pid ${recorded.pid} runs '${now.cmdline.join(' ')}', not '${recorded.cmdline.join(' ')}'`;
  return null;
}

/** This boot's id: start times count from boot, so a record from another boot identifies nothing. */
export function bootId(): string {
  return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
}

/** Every living pid whose process group is one of `pgids`: an engine's forked workers included. */
export function pidsInGroups(pgids: ReadonlySet<number>): Set<number> {
  const out = new Set<number>();
  if (pgids.size === 0) return out;
  for (const pid of listPids()) {
    const stat = readStat(pid);
    if (stat !== null && stat.state !== 'Z' && pgids.has(stat.pgid)) out.add(pid);
  }
  return out;
}

/** Every pid in /proc. */
export function listPids(): number[] {
  return readdirSync('/proc')
    .filter((n) => /^\d+$/.test(n))
    .map(Number);
}

/** The process's environment; null when unreadable (another user's, or gone). */
export function readEnviron(pid: number): Map<string, string> | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/environ`, 'utf8');
  } catch {
    return null;
  }
  const env = new Map<string, string>();
  for (const entry of text.split('\0')) {
    const eq = entry.indexOf('=');
    if (eq > 0) env.set(entry.slice(0, eq), entry.slice(eq + 1));
  }
  return env;
}
