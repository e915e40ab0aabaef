// Every command the README shows, run as written from the clone: a new user copies
// them first, so one that fails is the first thing they meet. Commands are taken from
// the README itself (```sh blocks, and inline code that starts with `npx llmgw` or
// `curl`); the few that cannot run here are listed below with the reason, so a new
// command is either run by this spec or consciously left out. The tenancy section's
// commands build on each other (the key needs its project), so they run in the README's
// order, against a second server started as that section says.

import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import * as assert from 'uvu/assert';
import { until } from './support/until.js';
import { suite } from './support/uvu.js';

const test = suite('README commands, as written');

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const README = readFileSync(new URL('README.md', `file://${ROOT}/`), 'utf8');

/** Commands that are not run here, and why. */
const NOT_RUN: Record<string, string> = {
  'npm ci && npm start': 'the embedded default on fixed ports; spec/roles/start-stop runs npm start, spec/roles/sim-nodes its fleet',
  'npm ci && npm test': 'this very suite',
  'npx llmgw …': 'an ellipsis, not a command',
  'npx llmgw ctl': 'the name of the command family',
  'npx llmgw run --role=agent': 'needs a GPU node (nvidia-smi); spec/roles/agent runs the agent on fixtures',
  'npx llmgw run --role=agent --config agent.yaml': 'needs a GPU node (nvidia-smi); spec/roles/agent runs the agent on fixtures',
  'npx llmgw run --role=server --config llmgw.yaml': "the README's example config names engines on other hosts",
  'npx llmgw ctl actors [--admin URL|HOST:PORT] [--token TOKEN] [--json]': 'a synopsis with placeholders; ctl actors is run bare',
  'npx llmgw run --role=sim': 'the bare role name; the sim line with its flags is run',
  'npx llmgw ctl cordon NODE': 'a synopsis; ctl drain sim-node-a, which cordons, is run (a cordon here would leave that drain nowhere to go)',
  'npx llmgw ctl drain NODE': 'a synopsis; ctl drain sim-node-a is run',
  'npx llmgw ctl logs REPLICA\\|SHARD [--tail N]': 'a synopsis: replica ids are made at placement; spec/fleet runs ctl logs on a real replica',
};
/** Placeholders given a real value, the way a reader fills them in. */
const FILLED: Record<string, string> = {
  'npx llmgw config check --config FILE': 'npx llmgw config check --config examples/llmgw.yaml',
  'npx llmgw ctl replicas [--model M]': 'npx llmgw ctl replicas --model llmgw-sim',
  'npx llmgw ctl explain-placement MODEL': 'npx llmgw ctl explain-placement llmgw-sim',
};

/** The README's commands in the order it shows them: ```sh blocks first, then inline code. */
function commandsInOrder(): string[] {
  const found = new Set<string>();
  for (const [, block] of README.matchAll(/```sh\n([\s\S]*?)```/g)) for (const line of block!.split('\n')) if (line.trim() !== '') found.add(line.trim());
  for (const [, span] of README.matchAll(/`([^`\n]+)`/g)) if (span!.startsWith('npx llmgw') || span!.startsWith('curl ')) found.add(span!);
  return [...found];
}

function commands(): string[] {
  return commandsInOrder().sort();
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `line` with sh in the clone, as a reader would paste it. */
function sh(line: string, env: Record<string, string> = {}): Promise<Ran> {
  return new Promise((resolve) => {
    const child = spawn('sh', ['-c', line], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Starts a long-running command and resolves with the first stdout line matching `ready`, and a stop. */
function start(line: string, ready: RegExp, env: Record<string, string>): Promise<{ match: RegExpMatchArray; stop: () => Promise<void> }> {
  return new Promise((resolve, reject) => {
    // In its own process group, signalled as a whole as a terminal's Ctrl-C would be:
    // npx does not pass a signal on to the llmgw it started. Leading VAR=value words
    // go before `exec`, which passes them on.
    const [, assignments, rest] = line.match(/^((?:\w+=\S+ )*)(.*)$/)!;
    const child = spawn('sh', ['-c', `${assignments}exec ${rest}`], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let out = '';
    let err = '';
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    const stop = async (): Promise<void> => {
      if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGTERM');
      await exited;
      // npx exits at once; wait until nothing of the group is left.
      await until(() => !groupAlive(child.pid!), `${line}: every process of its group gone`);
      child.stdout.destroy();
      child.stderr.destroy();
    };
    const timer = setTimeout(() => void stop().then(() => reject(new Error(`${line}: not ready within 30 s\n${out}\n${err}`))), 30_000);
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const match = out.match(ready);
      if (match) {
        clearTimeout(timer);
        resolve({ match, stop });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${line}: exited (${code}) before it was ready\n${out}\n${err}`));
    });
  });
}

test('every command is run here or named with the reason it is not', () => {
  const unknown = commands().filter((c) => !(c in NOT_RUN) && !RUNNERS.some((r) => r.match(c)));
  assert.equal(unknown, [], 'commands the README shows that this spec neither runs nor names');
  const gone = Object.keys(NOT_RUN).filter((c) => !commands().includes(c));
  assert.equal(gone, [], 'commands named here that the README no longer shows');
});

interface Ctx {
  data: string;
  admin: string;
  /** With tenancy on: the key the README's `keys create` made, once it has run. */
  key?: { id: string; key: string; prefix: string };
}

interface Runner {
  match: (cmd: string) => boolean;
  run: (cmd: string, ctx: Ctx) => Promise<void>;
  /** Run against the server started with tenancy on, in the README's order (each builds on the one before). */
  tenancy?: true;
}

const oneShot = (check: (r: Ran) => void): Runner['run'] => async (cmd, ctx) => {
  const line = (FILLED[cmd] ?? cmd)
    .replaceAll('localhost:4000', ctx.data)
    .replaceAll('127.0.0.1:4000', ctx.data)
    .replaceAll('KEY_ID', ctx.key?.id ?? 'KEY_ID');
  const r = await sh(line, { LLMGW_ADMIN: `http://${ctx.admin}` });
  assert.is(r.code, 0, `${line}\n${r.stdout}\n${r.stderr}`);
  check(r);
};

const RUNNERS: Runner[] = [
  { match: (c) => c === 'npx llmgw --help', run: oneShot((r) => assert.match(r.stdout, /llmgw run/)) },
  { match: (c) => c === 'npx llmgw --version' || c === 'npx llmgw version', run: oneShot((r) => assert.match(r.stdout, /^llmgw \d+\.\d+\.\d+/)) },
  { match: (c) => c === 'npx llmgw config schema', run: oneShot((r) => assert.ok((JSON.parse(r.stdout) as { $schema?: string }).$schema)) },
  { match: (c) => c in FILLED, run: oneShot(() => {}) },
  { match: (c) => /^npx llmgw ctl (actors|admission|endpoints|models|reload)$/.test(c), run: oneShot((r) => assert.ok(r.stdout.length > 0)) },
  { match: (c) => c.startsWith('curl '), run: oneShot((r) => assert.match(r.stdout, /"choices"/)) },
  {
    match: (c) => c.startsWith('npx llmgw run --role=sim --listen'),
    run: async (cmd) => {
      // The README's port may be taken on a developer's machine: any free one will do.
      const sim = await start(cmd.replace(/--listen \S+/, '--listen 127.0.0.1:0'), /listening on (http:\S+)/, {});
      try {
        const res = await fetch(`${sim.match[1]}/v1/models`);
        assert.is(res.status, 200);
      } finally {
        await sim.stop();
      }
    },
  },
  // The embedded default's simulated fleet. Commands run in sorted order: drain, then
  // explain-placement, nodes, replicas, and uncordon last.
  {
    match: (c) => c === 'npx llmgw ctl drain sim-node-a',
    run: async (cmd, ctx) => {
      await oneShot((r) => assert.match(r.stdout, /sim-node-a/))(cmd, ctx);
      // Replacement first: two replicas ready throughout, the end state both on sim-node-b.
      await until(async () => {
        const replicas = await adminJson<Replica[]>(ctx, '/admin/v1/replicas');
        return replicas.length === 2 && replicas.every((r) => r.state === 'ready' && r.shards.every((s) => s.node === 'sim-node-b'));
      }, 'the replica on sim-node-a moved to sim-node-b', 30_000);
      await chatThrough(ctx);
    },
  },
  {
    match: (c) => c === 'npx llmgw ctl explain-placement llmgw-sim',
    run: oneShot((r) => {
      assert.match(r.stdout, /sim-node-a/);
      assert.match(r.stdout, /sim-node-b/);
    }),
  },
  {
    match: (c) => c === 'npx llmgw ctl nodes',
    run: async (cmd, ctx) => {
      await oneShot((r) => assert.match(r.stdout, /^sim-node-a\s+\w+\s+connected.*4xh100-80g[\s\S]*^sim-node-b\s+ready\s+connected.*4xh100-80g/m))(cmd, ctx);
      const nodes = await adminJson<{ name: string; gpus: unknown[] }[]>(ctx, '/admin/v1/nodes');
      assert.equal(nodes.map((n) => [n.name, n.gpus.length]), [['sim-node-a', 4], ['sim-node-b', 4]]);
    },
  },
  {
    match: (c) => c === 'npx llmgw ctl replicas',
    run: oneShot((r) => assert.is(r.stdout.split('\n').filter((l) => /^llmgw-sim-\S+\s+llmgw-sim\s+h100-tp1\s+ready\s/.test(l)).length, 2, r.stdout)),
  },
  {
    match: (c) => c === 'npx llmgw ctl uncordon sim-node-a',
    run: async (cmd, ctx) => {
      await oneShot(() => {})(cmd, ctx);
      const nodes = await adminJson<{ name: string; state: string }[]>(ctx, '/admin/v1/nodes');
      assert.equal(nodes.find((n) => n.name === 'sim-node-a')?.state, 'ready');
    },
  },
  // Started by the test below; every other command runs against it.
  { match: (c) => c === 'npx llmgw run --role=server', run: async () => {} },
  ...tenancyRunners(),
];

const TENANCY_SERVER = 'LLMGW_TENANCY__STORE=llmgw.db npx llmgw run --role=server';

/** The tenancy section's commands, each checked for what the README says it does. */
function tenancyRunners(): Runner[] {
  const t = (match: (c: string) => boolean, run: Runner['run']): Runner => ({ match, run, tenancy: true });
  return [
    // Started by the tenancy test, on a store in a temporary folder.
    t((c) => c === TENANCY_SERVER, async () => {}),
    t((c) => c === 'npx llmgw ctl orgs create acme', oneShot((r) => assert.match(r.stdout, /^org_\w+\s+acme\s/m))),
    t((c) => c === 'npx llmgw ctl teams create ml --org acme', oneShot((r) => assert.match(r.stdout, /^team_\w+\s+ml\s+org_/m))),
    t((c) => c === 'npx llmgw ctl projects create chat --team ml', oneShot((r) => assert.match(r.stdout, /^proj_\w+\s+chat\s+team_/m))),
    t(
      (c) => c.startsWith('npx llmgw ctl keys create --project chat') && c.endsWith('--json'),
      async (cmd, ctx) => {
        await oneShot((r) => (ctx.key = JSON.parse(r.stdout) as Ctx['key']))(cmd, ctx);
        assert.match(ctx.key!.key, /^sk-llmgw-[0-9A-Za-z]{40,}$/);
        assert.ok(ctx.key!.key.startsWith(ctx.key!.prefix));
        // Without it: 401 invalid_api_key; with it, through the SDK as the README shows.
        const anonymous = await fetch(`http://${ctx.data}/v1/chat/completions`, { method: 'POST', body: JSON.stringify({ model: 'sim', messages: [{ role: 'user', content: 'hi' }] }) });
        assert.is(anonymous.status, 401);
        assert.is(((await anonymous.json()) as { error: { code: string } }).error.code, 'invalid_api_key');
        const reply = await sdk(ctx, ctx.key!.key).chat.completions.create({ model: 'sim', messages: [{ role: 'user', content: 'Hello!' }], max_tokens: 4 });
        assert.ok(reply.choices[0]!.message.content);
      },
    ),
    t((c) => c.startsWith('npx llmgw ctl limits set --org acme '), oneShot((r) => assert.match(r.stdout, /^org\s+org_\w+\s+600\s+200000\s+5000000\/month/m))),
    t(
      (c) => c.startsWith('npx llmgw ctl limits set --project chat '),
      async (cmd, ctx) => {
        await oneShot((r) => assert.match(r.stdout, /^project\s+proj_\w+\s+60\s.*llmgw-sim\s+silver\s+chat/m))(cmd, ctx);
        // The most restrictive along the chain: the project's 60 requests a minute, not the org's 600.
        const res = await fetch(`http://${ctx.data}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${ctx.key!.key}` },
          body: JSON.stringify({ model: 'sim', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 }),
        });
        assert.is(res.status, 200, await res.clone().text());
        assert.is(res.headers.get('x-ratelimit-limit-requests'), '60');
        assert.is(res.headers.get('x-ratelimit-limit-tokens'), '200000');
      },
    ),
    t((c) => c === 'npx llmgw ctl limits show', oneShot((r) => assert.equal(r.stdout.split('\n').filter((l) => /^(org|project)\s/.test(l)).length, 2, r.stdout))),
    t(
      (c) => c === 'npx llmgw ctl usage',
      // Both requests the key made so far, recorded by the time the command answers.
      oneShot((r) => assert.match(r.stdout, /^key_\w+\s+laptop\s+2\s/m, r.stdout)),
    ),
    t(
      (c) => c === 'npx llmgw ctl usage --by model --json',
      oneShot((r) => {
        const row = (JSON.parse(r.stdout) as { id: string; requests: number; promptTokens: number; completionTokens: number }[]).find((u) => u.id === 'llmgw-sim');
        assert.is(row?.requests, 2, r.stdout);
        assert.ok(row!.promptTokens > 0 && row!.completionTokens > 0, r.stdout);
      }),
    ),
    t(
      (c) => c === 'npx llmgw ctl audit',
      oneShot((r) => {
        for (const action of ['org.create', 'team.create', 'project.create', 'key.create', 'limits.set']) assert.match(r.stdout, new RegExp(`\\s${action.replace('.', '\\.')}\\s`), action);
      }),
    ),
    t((c) => c === 'npx llmgw ctl keys list', async (cmd, ctx) => oneShot((r) => assert.match(r.stdout, new RegExp(`${ctx.key!.prefix}.*active`)))(cmd, ctx)),
    t(
      (c) => c === 'npx llmgw ctl keys rotate KEY_ID',
      async (cmd, ctx) => {
        let issued = '';
        await oneShot((r) => (issued = r.stdout))(cmd, ctx);
        const fresh = issued.match(/sk-llmgw-[0-9A-Za-z]{40,}/)?.[0];
        assert.ok(fresh && fresh !== ctx.key!.key, issued);
        // Both work: the new key, and the old one for its grace period.
        for (const key of [fresh, ctx.key!.key]) await sdk(ctx, key).chat.completions.create({ model: 'sim', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 });
      },
    ),
    t(
      (c) => c === 'npx llmgw ctl keys revoke KEY_ID',
      async (cmd, ctx) => {
        await oneShot((r) => assert.match(r.stdout, /revoked/))(cmd, ctx);
        const err = await sdk(ctx, ctx.key!.key)
          .chat.completions.create({ model: 'sim', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 })
          .then(() => null, (e: unknown) => e);
        assert.instance(err, OpenAI.AuthenticationError);
      },
    ),
  ];
}

/** The OpenAI SDK pointed at the data port with `apiKey`, as the README sets it up; no retries, so a refusal shows at once. */
function sdk(ctx: Ctx, apiKey: string): OpenAI {
  return new OpenAI({ baseURL: `http://${ctx.data}/v1`, apiKey, maxRetries: 0 });
}

interface Replica {
  state: string;
  shards: { node: string }[];
}

async function adminJson<T>(ctx: Ctx, path: string): Promise<T> {
  const res = await fetch(`http://${ctx.admin}${path}`);
  assert.is(res.status, 200, path);
  return (await res.json()) as T;
}

/** A chat completion through the data port, as the README's SDK example sends it. */
async function chatThrough(ctx: Ctx): Promise<void> {
  const res = await fetch(`http://${ctx.data}/v1/chat/completions`, { method: 'POST', body: JSON.stringify({ model: 'sim', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 }) });
  assert.is(res.status, 200, await res.clone().text());
  assert.match(res.headers.get('x-llmgw-endpoint') ?? '', /^llmgw-sim-/, 'served by a placed replica');
}

test('each runnable command succeeds against the embedded default started as the README says', async () => {
  const server = await start('npx llmgw run --role=server', /listening on http:\/\/(\S+) \(admin http:\/\/(\S+)\)/, {
    LLMGW_LISTEN: '127.0.0.1:0',
    LLMGW_ADMIN_LISTEN: '127.0.0.1:0',
    // The in-process agents dial the port it bound.
    LLMGW_AGENT_LISTEN: '127.0.0.1:0',
  });
  const ctx: Ctx = { data: server.match[1]!, admin: server.match[2]! };
  let ran = 0;
  try {
    for (const cmd of commands()) {
      const runner = RUNNERS.find((r) => r.match(cmd));
      if (!runner || runner.tenancy) continue;
      await runner.run(cmd, ctx);
      ran++;
    }
  } finally {
    await server.stop();
  }
  assert.ok(ran >= 10, `ran ${ran} commands`);
});

test("the tenancy section's commands, in its order, against the embedded default with tenancy on", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'llmgw-readme-tenancy-'));
  const server = await start(TENANCY_SERVER.replace('=llmgw.db', `=${join(dir, 'llmgw.db')}`), /listening on http:\/\/(\S+) \(admin http:\/\/(\S+)\)/, {
    LLMGW_LISTEN: '127.0.0.1:0',
    LLMGW_ADMIN_LISTEN: '127.0.0.1:0',
    LLMGW_AGENT_LISTEN: '127.0.0.1:0',
  });
  const ctx: Ctx = { data: server.match[1]!, admin: server.match[2]! };
  const ran: string[] = [];
  try {
    for (const cmd of commandsInOrder()) {
      const runner = RUNNERS.find((r) => r.match(cmd));
      if (!runner?.tenancy) continue;
      await runner.run(cmd, ctx);
      ran.push(cmd);
    }
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  assert.is(ran.length, tenancyRunners().length, `ran ${ran.join('; ')}`);
});

test.run();
