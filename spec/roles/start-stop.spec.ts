// Starting and stopping as a new user does: `npm start` and `kill`, and a second start on
// a port that is still taken.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { suite } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { runCli } from '../support/cli.js';
import { until } from '../support/until.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'llmgw-start-stop-'));

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

const test = suite('start and stop');

// npm runs a script through `sh -c` and forwards SIGTERM to that shell only; dash dies of
// it and leaves node running. The start script `exec`s node, so npm's child is the server.
test('npm start, then kill of npm, stops the server it started', async () => {
  const npm = spawn('npm', ['start', '--silent'], {
    cwd: ROOT,
    env: { ...process.env, LLMGW_LISTEN: '127.0.0.1:0', LLMGW_ADMIN_LISTEN: '127.0.0.1:0', LLMGW_AGENT_LISTEN: '127.0.0.1:0', LLMGW_LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  npm.stdout.on('data', (d: Buffer) => (stdout += d));
  npm.stderr.on('data', (d: Buffer) => (stderr += d));
  const npmExited = new Promise((resolve) => npm.once('exit', resolve));
  let pid: number | undefined;
  try {
    // The plain line on stdout, and the same as a JSON log line on stderr (with the pid).
    const logged = (): string | undefined => /^(\{.*"msg":"listening".*)\n/m.exec(stderr)?.[1];
    await until(() => /^llmgw server listening on /m.test(stdout) && logged() !== undefined, `both listening lines\n${stdout}\n${stderr}`, 30_000);
    const line = logged()!;
    pid = (JSON.parse(line) as { pid: number }).pid;
    assert.ok(alive(pid));
    npm.kill('SIGTERM');
    await npmExited;
    await until(() => !alive(pid!), `server pid ${pid} to exit after npm was killed`, 15_000);
  } finally {
    if (pid !== undefined && alive(pid)) process.kill(pid, 'SIGKILL');
    npm.kill('SIGKILL');
    npm.stdout.destroy();
    npm.stderr.destroy();
  }
});

function holdPort(): Promise<{ port: number; server: Server }> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => resolve({ port: (server.address() as { port: number }).port, server }));
  });
}

test('a busy port stops every role at once, naming the port and the setting', async () => {
  const { port, server } = await holdPort();
  const taken = `127.0.0.1:${port}`;
  const config = join(dir, 'llmgw.yaml');
  // An endpoint that refuses at once keeps the start short; nothing needs to answer.
  writeFileSync(config, 'models: [{ name: m }]\nendpoints: [{ id: e, url: "http://127.0.0.1:1", models: [m] }]\n');
  const agentConfig = join(dir, 'agent.yaml');
  mkdirSync(join(dir, 'ib'), { recursive: true });
  writeFileSync(agentConfig, `no_gpu: true\nib_root: ${JSON.stringify(join(dir, 'ib'))}\nstate_dir: ${JSON.stringify(join(dir, 'state'))}\n`);
  try {
    const cases: [string, string[], RegExp][] = [
      ['server listen', ['run', '--role=server', '--config', config, '--listen', taken, '--admin-listen', '127.0.0.1:0'], /^llmgw: listen 127\.0\.0\.1:\d+: port (\d+) is already in use .* set listen \(or --listen, LLMGW_LISTEN\) to a free HOST:PORT$/m],
      ['server admin_listen', ['run', '--role=server', '--config', config, '--listen', '127.0.0.1:0', '--admin-listen', taken], /^llmgw: admin_listen 127\.0\.0\.1:\d+: port (\d+) is already in use .* set admin_listen \(or --admin-listen, LLMGW_ADMIN_LISTEN\)/m],
      ['agent', ['run', '--role=agent', '--config', agentConfig, '--listen', taken], /^llmgw: listen 127\.0\.0\.1:\d+: port (\d+) is already in use .* set listen \(or --listen\)/m],
      ['sim', ['run', '--role=sim', '--model', 'm', '--listen', taken], /^llmgw: --listen 127\.0\.0\.1:\d+: port (\d+) is already in use .* set --listen to a free HOST:PORT$/m],
    ];
    for (const [what, args, message] of cases) {
      const r = await runCli(args, {}, 20_000);
      assert.is(r.code, 2, `${what}: ${r.stderr}`);
      const m = message.exec(r.stderr);
      assert.ok(m, `${what}: ${r.stderr}`);
      assert.is(Number(m[1]), port, what);
    }
  } finally {
    server.close();
  }
});

test.run();
