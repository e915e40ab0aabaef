// Starts the real `llmgw` CLI as a child process for end-to-end specs and waits for the
// line that says it is ready (e.g. `llmgw sim M listening on http://127.0.0.1:PORT`).
// Waiting on that line, not on a sleep, is what makes these specs both fast and reliable.

import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI } from './cli.js';

export interface StartOptions {
  /** A line of stdout to wait for; its match is returned (capture groups for URLs). */
  waitFor: RegExp;
  env?: Record<string, string> | undefined;
  /** Working directory; default the spec process's. */
  cwd?: string | undefined;
  /** How long the line may take; default 15 s (a cold start on a loaded 2-core box). */
  timeoutMs?: number | undefined;
}

export interface Started {
  child: ChildProcess;
  match: RegExpMatchArray;
  /** Everything the process wrote to stderr so far (its JSON logs, errors). */
  stderr(): string;
  /** SIGTERM, then SIGKILL if it has not exited within 5 s; resolves once it has exited. */
  stop(): Promise<void>;
}

// Children still running when the spec process exits (a failed assertion, uvu's
// process.exit) are killed, so no engine outlives the run holding a port.
const live = new Set<ChildProcess>();
let exitHookInstalled = false;
function track(child: ChildProcess): void {
  live.add(child);
  child.once('exit', () => live.delete(child));
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const c of live) c.kill('SIGKILL');
  });
}

/** Spawns `node dist/src/cli/main.js ...args` and resolves when stdout shows `waitFor`. */
export function startProcess(args: string[], opts: StartOptions): Promise<Started> {
  const timeoutMs = opts.timeoutMs ?? 15_000;
  const child = spawn(process.execPath, [CLI, ...args], {
    env: { ...process.env, ...opts.env },
    cwd: opts.cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  track(child);
  let stdout = '';
  let stderr = '';
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (d: string) => {
    stderr += d;
    if (stderr.length > 1_000_000) stderr = stderr.slice(-500_000); // a chatty child must not grow without bound
  });
  child.stdout!.setEncoding('utf8');

  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }
    // Drain and close the pipes so the spec process holds nothing open afterwards.
    child.stdout!.destroy();
    child.stderr!.destroy();
  };

  return new Promise<Started>((resolve, reject) => {
    const describe = (why: string): Error =>
      new Error(`llmgw ${args.join(' ')} ${why} before printing ${opts.waitFor}\n--- stdout ---\n${stdout}\n--- stderr ---\n${stderr}`);
    const fail = (why: string): void => {
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      child.off('exit', onExit);
      child.off('error', onError);
      void stop().then(() => reject(describe(why)));
    };
    const onData = (d: string): void => {
      stdout += d;
      // Only whole lines: a half-written `listening on http://127.0.0.1:4` must not match.
      const lines = stdout.split('\n');
      lines.pop();
      for (const line of lines) {
        const match = line.match(opts.waitFor);
        if (!match) continue;
        clearTimeout(timer);
        child.stdout!.off('data', onData);
        child.off('exit', onExit);
        child.off('error', onError);
        child.stdout!.resume(); // keep reading so a full pipe never blocks the child
        resolve({ child, match, stderr: () => stderr, stop });
        return;
      }
    };
    const onExit = (code: number | null, signal: NodeJS.Signals | null): void => fail(`exited (code ${code}, signal ${signal})`);
    const onError = (err: Error): void => fail(`failed to start (${err.message})`);
    const timer = setTimeout(() => fail(`did not start within ${timeoutMs} ms`), timeoutMs);
    child.stdout!.on('data', onData);
    child.once('exit', onExit);
    child.once('error', onError);
  });
}

const configDirs: string[] = [];

/**
 * Writes `yaml` as `llmgw.yaml` in a fresh temporary folder and returns its path; the
 * folders go when the spec process exits.
 */
export function writeConfig(yaml: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'llmgw-spec-'));
  if (configDirs.push(dir) === 1) process.on('exit', () => configDirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
  const path = join(dir, 'llmgw.yaml');
  writeFileSync(path, yaml);
  return path;
}

export interface StartedServer extends Started {
  /** The data port's URL. */
  url: string;
  /** The admin port's URL. */
  admin: string;
}

/** Starts `llmgw run --role=server --config <config>` and waits for its listening line. */
export async function startServer(config: string, opts: Omit<StartOptions, 'waitFor'> = {}): Promise<StartedServer> {
  const server = await startProcess(['run', '--role=server', '--config', config], { ...opts, waitFor: /listening on (\S+) \(admin (\S+)\)/ });
  return Object.assign(server, { url: server.match[1]!, admin: server.match[2]! });
}
