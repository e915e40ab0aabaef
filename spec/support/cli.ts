import { Writable } from 'node:stream';
import { Cli, type CommandClass } from 'clipanion';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The built CLI, resolved from this file so specs run from any working directory. */
export const CLI = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs one `llmgw` command to completion. */
export function runCli(args: string[], env: Record<string, string> = {}, timeoutMs = 20_000): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d));
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`llmgw ${args.join(' ')} did not finish within ${timeoutMs} ms\n${stderr}`));
    }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * Runs clipanion commands in this process, capturing their output: for command logic
 * that needs no process of its own (a spawned `llmgw` costs ~150 ms).
 */
export async function runInProcess(
  commands: CommandClass[],
  argv: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const cli = new Cli({ binaryName: 'llmgw' });
  for (const c of commands) cli.register(c);
  let stdout = '';
  let stderr = '';
  const sink = (add: (s: string) => void): Writable =>
    new Writable({
      write(chunk: Buffer, _enc, done) {
        add(chunk.toString());
        done();
      },
    });
  const code = await cli.run(argv, { stdin: process.stdin, stdout: sink((s) => (stdout += s)), stderr: sink((s) => (stderr += s)), env });
  return { code, stdout, stderr };
}
