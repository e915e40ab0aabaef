// The embedded default's simulated fleet as `npm start` runs it: a server whose two
// simulated nodes are agents in its own process, engines that are real processes, and a
// SIGTERM that must leave none of them behind.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { request } from 'undici';
import { suite } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { tempDir } from '../agent/discovery/fixtures.js';
import { startProcess, type Started } from '../support/process.js';

const test = suite('simulated nodes (the embedded default)');

/** Sim engines whose output goes to a log under `dir`: the ones this spec's server started. */
function simEngines(dir: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (!readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes('vllm-cli.js')) continue;
      if (readlinkSync(`/proc/${entry}/fd/1`).startsWith(dir)) pids.push(Number(entry));
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return pids;
}

async function json<T>(url: string, init: { method?: 'GET' | 'POST'; body?: string } = {}): Promise<{ status: number; body: T }> {
  const res = await request(url, { method: init.method ?? 'GET', body: init.body, headers: { 'content-type': 'application/json' } });
  return { status: res.statusCode, body: (await res.body.json()) as T };
}

test('the listening line comes once both replicas serve on the simulated nodes; SIGTERM then stops every engine', async () => {
  const dir = tempDir('llmgw-sim-nodes-');
  let server: Started | undefined;
  try {
    server = await startProcess(['run', '--role=server'], {
      cwd: dir,
      // Port 0 for the agent port too: the in-process agents dial the port it bound.
      env: { LLMGW_LISTEN: '127.0.0.1:0', LLMGW_ADMIN_LISTEN: '127.0.0.1:0', LLMGW_AGENT_LISTEN: '127.0.0.1:0', LLMGW_LOG_LEVEL: 'info' },
      waitFor: /listening on (\S+) \(admin (\S+)\)/,
      timeoutMs: 45_000,
    });
    const [, url, admin] = server.match as unknown as [string, string, string];
    const chat = await json<{ choices: { message: { content: string } }[] }>(`${url}/v1/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({ model: 'sim', messages: [{ role: 'user', content: 'hello' }], max_tokens: 4 }),
    });
    assert.is(chat.status, 200, 'the first request is answered, not refused while replicas start');
    const replicas = (await json<{ state: string; shards: { node: string }[] }[]>(`${admin}/admin/v1/replicas`)).body;
    // Usually one per node, but which node registers first under load is not the spec's to fix.
    assert.equal(
      replicas.map((r) => r.state),
      ['ready', 'ready'],
    );
    assert.ok(replicas.every((r) => ['sim-node-a', 'sim-node-b'].includes(r.shards[0]!.node)));
    assert.is(simEngines(dir).length, 2, 'two engine processes, logging under the working directory');

    await server.stop();
    assert.is(server.child.exitCode, 0, `exited cleanly\n${server.stderr().slice(-3000)}`);
    assert.equal(simEngines(dir), [], 'no engine outlives the server');
  } finally {
    await server?.stop();
    for (const pid of simEngines(dir)) process.kill(pid, 'SIGKILL');
  }
});

test.run();
