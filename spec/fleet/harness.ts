// A real fleet on loopback for the end-to-end specs: one `llmgw run --role=server` with
// its control plane, agents as `llmgw run --role=agent` processes (GPUs from the
// fixture nvidia-smi stand-ins, each node its own state dir and its own loopback
// address, 127.0.0.N, so that two nodes' engines can hold the same port as on two
// machines), and the sim engine behind `llmgw-vllm-sim` as the vllm the agents exec.
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { request } from 'undici';
import { freePort, tempDir } from '../agent/supervisor/helpers.js';
import { startProcess, startServer, writeConfig, type Started, type StartedServer } from '../support/process.js';
import { until } from '../support/until.js';

export const VLLM_SIM = fileURLToPath(new URL('../../src/sim/vllm-cli.js', import.meta.url));
// `npm run build` sets the bit; a plain `tsc` does not.
chmodSync(VLLM_SIM, 0o755);
const HARDWARE = fileURLToPath(new URL('../../../spec/fixtures/hardware/', import.meta.url));

/** Timings short enough for a spec, with the two expiry stages far enough apart to see each. */
export const FAST_CONTROL = {
  interval_ms: 100,
  unreachable_after_ms: 1_500,
  lost_after_ms: 4_000,
  settle_ms: 1_500,
  drain_grace_ms: 15_000,
};

export interface Fleet {
  server: StartedServer;
  /** The agents' URL of the server's agent port. */
  agentUrl: string;
  config: string;
  dir: string;
  nodes: Map<string, FleetNode>;
  /** Loads still running: stopped first when the fleet stops (a failed assertion leaves them). */
  loads: Set<Load>;
  /** Restarts the server on the same ports and config. */
  restartServer(): Promise<void>;
  /** Rewrites the config file with another `models:` list (or raw YAML text), for a reload. */
  rewrite(models: string, raw?: boolean): void;
  /** The admin API, JSON in and out. */
  admin<T = any>(method: 'GET' | 'POST', path: string): Promise<{ status: number; json: T }>;
  openai(): OpenAI;
  stop(): Promise<void>;
}

export interface FleetNode {
  name: string;
  address: string;
  stateDir: string;
  config: string;
  agent: Started | null;
  /** The agent's local control URL (GET /agent/v1/shards). */
  url: string;
}

export interface NodeOptions {
  /** Fixture folder under spec/fixtures/hardware. */
  hardware?: string;
  /** fabric name → HCAs, as the agent config's `fabrics`. */
  fabrics?: Record<string, string[]>;
}

/** `models` is the YAML of the `models:` list, indented by two spaces. */
export async function startFleet(models: string, control: Partial<typeof FAST_CONTROL> = {}): Promise<Fleet> {
  const dir = tempDir('llmgw-fleet-');
  const agentPort = await freePort();
  // Engines' ports: a range unlikely to meet another spec's, below the ephemeral range.
  const lo = 20_000 + Math.floor(Math.random() * 90) * 100;
  const c = { ...FAST_CONTROL, ...control };
  const head = [
    'listen: "127.0.0.1:0"',
    'admin_listen: "127.0.0.1:0"',
    `agent_listen: "127.0.0.1:${agentPort}"`,
    'agent_insecure: true',
    'access_log: false',
    `state_dir: ${JSON.stringify(join(dir, 'server'))}`,
    `control: { interval_ms: ${c.interval_ms}, unreachable_after_ms: ${c.unreachable_after_ms}, lost_after_ms: ${c.lost_after_ms}, settle_ms: ${c.settle_ms}, drain_grace_ms: ${c.drain_grace_ms}, port_range: [${lo}, ${lo + 99}] }`,
    'router: { poll_interval_ms: 100, cooldown: { failures: 1, ms: 500 } }',
    'models:',
  ];
  let yaml = [...head, models].join('\n');
  const config = writeConfig(yaml);
  let server = await startServer(config, { env: { LLMGW_LOG_LEVEL: 'info' } });
  const fleet: Fleet = {
    get server() {
      return server;
    },
    agentUrl: `http://127.0.0.1:${agentPort}`,
    config,
    dir,
    nodes: new Map(),
    loads: new Set(),
    rewrite(next, raw = false) {
      yaml = raw ? next : [...head, next].join('\n');
      writeFileSync(config, yaml);
    },
    async restartServer() {
      await server.stop();
      // The same ports: agents dial the agent port they were given, clients the data port.
      const again = yaml.replace('listen: "127.0.0.1:0"', `listen: "${new URL(server.url).host}"`).replace('admin_listen: "127.0.0.1:0"', `admin_listen: "${new URL(server.admin).host}"`);
      server = await startServer(writeConfig(again), { env: { LLMGW_LOG_LEVEL: 'info' } });
    },
    async admin(method, path) {
      const res = await request(`${server.admin}${path}`, { method });
      const text = await res.body.text();
      return { status: res.statusCode, json: text === '' ? null : JSON.parse(text) };
    },
    openai: () => new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 20_000 }),
    async stop() {
      await Promise.all([...fleet.loads].map((l) => l.stop()));
      if (process.env.SPEC_FLEET_LOGS) {
        const keep = (t: string) => t.split('\n').filter((l) => !/"level":"debug"/.test(l)).slice(-150).join('\n');
        console.log(`--- server ---\n${keep(server.stderr())}`);
        for (const n of fleet.nodes.values()) if (n.agent) console.log(`--- ${n.name} ---\n${keep(n.agent.stderr())}`);
      }
      await Promise.all([...fleet.nodes.values()].map((n) => stopNode(n, true)));
      await server.stop();
    },
  } as Fleet;
  return fleet;
}

let nextAddress = 2;

/** Starts an agent for node `name`, dialling the fleet's server. */
export async function startNode(fleet: Fleet, name: string, opts: NodeOptions = {}): Promise<FleetNode> {
  const existing = fleet.nodes.get(name);
  const address = existing?.address ?? `127.0.0.${nextAddress++}`;
  const stateDir = existing?.stateDir ?? join(fleet.dir, name, 'state');
  mkdirSync(stateDir, { recursive: true });
  const hw = join(HARDWARE, opts.hardware ?? 'h100-8x');
  const ibRoot = existsSync(join(hw, 'sys')) ? join(hw, 'sys') : join(fleet.dir, 'no-ib');
  mkdirSync(ibRoot, { recursive: true });
  const config = join(fleet.dir, name, 'agent.yaml');
  writeFileSync(
    config,
    [
      `node_id: ${name}`,
      `server: ${JSON.stringify(fleet.agentUrl)}`,
      'insecure: true',
      `mgmt_addr: "${address}"`,
      'listen: "127.0.0.1:0"',
      `state_dir: ${JSON.stringify(stateDir)}`,
      `nvidia_smi: ${JSON.stringify(join(hw, 'nvidia-smi'))}`,
      `ib_root: ${JSON.stringify(ibRoot)}`,
      `fabrics: ${JSON.stringify(opts.fabrics ?? {})}`,
      'heartbeat_interval_ms: 200',
      'stop_timeout_ms: 2000',
      'drain_grace_ms: 10000',
      'health_interval_ms: 50',
      'watch_interval_ms: 50',
      'settle_ms: 300',
      'ready_timeout_ms: 20000',
      `engines: { vllm: ${JSON.stringify(VLLM_SIM)} }`,
    ].join('\n') + '\n',
  );
  const agent = await startProcess(['run', '--role=agent', '--config', config], {
    waitFor: /^llmgw agent listening on (\S+)$/,
    env: { LLMGW_LOG_LEVEL: 'info', LLMGW_SIM_SPEED: '20' },
    // Several agents and engines starting at once on 2 cores: a start can take long.
    timeoutMs: 45_000,
  });
  const node: FleetNode = { name, address, stateDir, config, agent, url: agent.match[1]! };
  fleet.nodes.set(name, node);
  return node;
}

/** The process groups of the engines a node's agent supervises. */
export async function engineGroups(node: FleetNode): Promise<number[]> {
  const res = await request(`${node.url}/agent/v1/shards`);
  const shards = (await res.body.json()) as { processes: { pgid: number }[] }[];
  return [...new Set(shards.flatMap((s) => s.processes.map((p) => p.pgid)))];
}

/** Stops the agent; with `engines`, SIGKILLs its engines too (a node that died). */
export async function stopNode(node: FleetNode, engines: boolean, signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM'): Promise<void> {
  if (!node.agent) return;
  const groups = engines ? await engineGroups(node).catch(() => []) : [];
  if (signal === 'SIGKILL') node.agent.child.kill('SIGKILL');
  await node.agent.stop();
  node.agent = null;
  for (const g of groups) {
    try {
      process.kill(-g, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

export interface Load {
  ok: number;
  failed: number;
  errors: string[];
  stop(): Promise<void>;
}

/** `clients` OpenAI SDK clients streaming one completion after another until stopped. */
export function streamLoad(fleet: Fleet, model: string, clients: number): Load {
  const load: Load = { ok: 0, failed: 0, errors: [], stop: async () => undefined };
  let running = true;
  const loops = Array.from({ length: clients }, async (_, i) => {
    const client = fleet.openai();
    while (running) {
      try {
        const stream = await client.chat.completions.create({ model, stream: true, max_tokens: 24, messages: [{ role: 'user', content: `client ${i}: tell me about fleets` }] });
        let text = '';
        for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
        if (text.length === 0) throw new Error('empty completion');
        load.ok++;
      } catch (err) {
        load.failed++;
        if (load.errors.length < 20) load.errors.push(err instanceof Error ? err.message : String(err));
      }
    }
  });
  load.stop = async () => {
    running = false;
    fleet.loads.delete(load);
    await Promise.all(loops);
  };
  fleet.loads.add(load);
  return load;
}

export async function replicas(fleet: Fleet, model?: string): Promise<any[]> {
  return (await fleet.admin('GET', `/admin/v1/replicas${model ? `?model=${encodeURIComponent(model)}` : ''}`)).json;
}

export async function readyReplicas(fleet: Fleet, model: string): Promise<any[]> {
  return (await replicas(fleet, model)).filter((r) => r.state === 'ready');
}

/** Waits until `model` has `n` ready replicas and the router lists as many ready endpoints for it. */
export async function untilServing(fleet: Fleet, model: string, n: number, timeoutMs = 30_000): Promise<any[]> {
  let ready: any[] = [];
  await until(
    async () => {
      ready = await readyReplicas(fleet, model);
      if (ready.length !== n) return false;
      const eps = (await fleet.admin('GET', '/admin/v1/endpoints')).json as { id: string; ready: boolean }[];
      return ready.every((r) => eps.some((e) => e.id === r.id && e.ready));
    },
    `${n} ready replicas of ${model} routed to`,
    timeoutMs,
  );
  return ready;
}
