// Child processes for the load benchmarks: sim engines, the llmgw server, the baseline
// proxy, the static upstream, nginx. Each starts in a process group of its own, so
// stopping it also stops whatever it forked (nginx's worker), and every group still
// alive is killed when the bench exits — normally, on an exception, or on Ctrl-C — so a
// failed run never leaves an engine holding a port or a core.

import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { constants } from 'node:os';
import { fileURLToPath } from 'node:url';

/** The built llmgw CLI, resolved from this file so the bench runs from any directory. */
export const LLMGW_CLI = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));

export interface LaunchOptions {
  /** Shown in errors: which process failed to start. */
  name: string;
  command: string;
  args: string[];
  /** A whole stdout line that says the process is ready; its match is returned. */
  waitFor?: RegExp;
  /** Polled every 50 ms until true, for programs with no ready line (nginx). */
  probe?: () => Promise<boolean>;
  env?: Record<string, string>;
  /** Default 20 s: a cold start on a loaded 2-core box. */
  timeoutMs?: number;
}

export interface Launched {
  readonly name: string;
  readonly pid: number;
  /** The ready line's match (capture groups carry URLs); empty for a probed start. */
  readonly match: RegExpMatchArray | [];
  /** Whether the process is still running: a dead engine invalidates a run's numbers. */
  alive(): boolean;
  /** The tail of what it wrote to stderr, for error messages. */
  stderr(): string;
  /** SIGTERM to its group, SIGKILL after 5 s; resolves once it has exited. */
  stop(): Promise<void>;
}

const STDERR_KEEP = 64 * 1024;
const live = new Set<ChildProcess>();
let hooksInstalled = false;

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal);
  } catch {
    // Already gone.
  }
}

function installHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  // 'exit' runs on normal exit and after an uncaught exception; the signal handlers make
  // Ctrl-C go through it too (the children are in their own groups, so the terminal's
  // SIGINT does not reach them).
  process.on('exit', () => {
    for (const c of live) killGroup(c, 'SIGKILL');
  });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => process.exit(128 + constants.signals[signal]));
  }
}

/** Spawns `command args` in a new process group and resolves when it is ready. */
export function launch(opts: LaunchOptions): Promise<Launched> {
  installHooks();
  const timeoutMs = opts.timeoutMs ?? 20_000;
  const child = spawn(opts.command, opts.args, {
    env: { ...process.env, ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  live.add(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  void exited.then(() => live.delete(child));
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8');
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (d: string) => {
    stderr += d;
    if (stderr.length > 2 * STDERR_KEEP) stderr = stderr.slice(-STDERR_KEEP);
  });
  const alive = (): boolean => child.exitCode === null && child.signalCode === null;
  const stop = async (): Promise<void> => {
    if (alive()) {
      killGroup(child, 'SIGTERM');
      const timer = setTimeout(() => killGroup(child, 'SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }
    // The group may outlive its leader (a worker not yet told): make sure it is gone.
    killGroup(child, 'SIGKILL');
    child.stdout!.destroy();
    child.stderr!.destroy();
  };

  return new Promise<Launched>((resolve, reject) => {
    let settled = false;
    const ready = (match: RegExpMatchArray | []): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      child.off('exit', onExit);
      child.off('error', onError);
      // Keep reading so a full pipe never blocks the child.
      child.stdout!.on('data', () => {});
      resolve({ name: opts.name, pid: child.pid!, match, alive, stderr: () => stderr.slice(-STDERR_KEEP), stop });
    };
    const fail = (why: string): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void stop().then(() =>
        reject(new Error(`${opts.name} (${opts.command} ${opts.args.join(' ')}) ${why}\n--- stdout ---\n${stdout}\n--- stderr ---\n${stderr.slice(-STDERR_KEEP)}`)),
      );
    };
    const onExit = (code: number | null, signal: NodeJS.Signals | null): void => fail(`exited (code ${code}, signal ${signal}) before it was ready`);
    const onError = (err: Error): void => fail(`failed to start: ${err.message}`);
    const timer = setTimeout(() => fail(`was not ready within ${timeoutMs} ms`), timeoutMs);
    child.once('exit', onExit);
    child.once('error', onError);
    child.stdout!.on('data', (d: string) => {
      if (settled || !opts.waitFor) return;
      stdout += d;
      // Whole lines only: a half-written `listening on http://127.0.0.1:4` must not match.
      const lines = stdout.split('\n');
      lines.pop();
      for (const line of lines) {
        const m = line.match(opts.waitFor);
        if (m) return ready(m);
      }
    });
    if (opts.probe) {
      const probe = opts.probe;
      const poll = async (): Promise<void> => {
        while (!settled) {
          if (await probe().catch(() => false)) return ready([]);
          await new Promise((r) => setTimeout(r, 50));
        }
      };
      void poll();
    }
  });
}

/** Runs `node <script> args` (a built bench module) and waits for `waitFor`. */
export function launchNode(name: string, script: string, args: string[], waitFor: RegExp, env: Record<string, string> = {}): Promise<Launched> {
  return launch({ name, command: process.execPath, args: [script, ...args], waitFor, env });
}

/**
 * Waits for processes started in parallel and adds each one that started to `into` (so the
 * caller's cleanup stops it) before rethrowing the first failure.
 */
export async function startedAll<T extends Launched>(starts: readonly Promise<T>[], into: Launched[]): Promise<T[]> {
  const settled = await Promise.allSettled(starts);
  for (const s of settled) if (s.status === 'fulfilled') into.push(s.value);
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) throw failed.reason;
  return settled.map((s) => (s as PromiseFulfilledResult<T>).value);
}

/** Stops every process given, in parallel; never throws. */
export async function stopAll(procs: readonly (Launched | undefined)[]): Promise<void> {
  await Promise.all(procs.map((p) => p?.stop()));
}

/** Throws, with its stderr, if any process has died: numbers measured past a crash mean nothing. */
export function assertAlive(procs: readonly Launched[]): void {
  for (const p of procs) {
    if (!p.alive()) throw new Error(`${p.name} (pid ${p.pid}) died during the run\n--- stderr ---\n${p.stderr()}`);
  }
}

/**
 * CPU time (user + system, all its threads) a process has used so far, in ms, from
 * /proc; null where there is none (not Linux). Read before and after a run, it says
 * what a proxy cost per request, which latency alone hides on shared cores. `thread`:
 * its main thread's alone (JavaScript's, where a request's own work runs), not V8's
 * helpers (GC, compilers) or worker threads.
 */
export function cpuMs(pid: number, thread: 'all' | 'main' = 'all'): number | null {
  try {
    const stat = readFileSync(thread === 'all' ? `/proc/${pid}/stat` : `/proc/${pid}/task/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces) in brackets: utime, stime are 14th and 15th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return null;
  }
}
/** USER_HZ: 100 on every Linux this runs on (sysconf is not reachable from Node). */
const CLOCK_TICKS = 100;

/** A port that was free a moment ago, for programs that cannot report the one they bound (nginx). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}
