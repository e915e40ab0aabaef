// The fleet bench's load generator, run as a child process (forked, with an IPC channel)
// so that its CPU is never the control thread's: N simulated agents, each a real agent
// stream (Connect bidi over HTTP/2) multiplexed `--per-session` to an HTTP/2 session.
// Each sends the Register of a real 8-GPU node (the h100-8x discovery fixture) and,
// once registered, a Heartbeat stamped with Date.now() every `--heartbeat-ms`, at a
// random phase, so the fleet's heartbeats arrive spread out as a real fleet's do.
//
// IPC: the child says {type: 'opening'} when it starts dialing and {type: 'registered'}
// when every agent has its Registered answer; it answers {type: 'stats'} with what it
// sent and its own load, and exits on {type: 'stop'}.
import { setMaxListeners } from 'node:events';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { discoverInventory } from '../../src/agent/discovery/inventory.js';
import { createAgentStreamClient, type AgentMessageInit, type AgentStreamClient } from '../../src/agent/stream/agent-stream-client.js';
import { reconnectForever } from '../../src/agent/stream/reconnect.js';
import { registerMessage } from '../../src/agent/stream/register-message.js';
import { LlmgwError } from '../../src/errors.js';
import { PushQueue } from '../../src/net/push-queue.js';
import { ibRootOf, smiOf } from '../../spec/agent/discovery/fixtures.js';

export type ToAgents = { type: 'stats' } | { type: 'stop' };

export interface AgentsStats {
  /** Heartbeats pushed onto the streams so far. */
  readonly sent: number;
  /** Streams that ended or failed and were opened again. */
  readonly retries: number;
  readonly firstError: string | null;
  /** This process's event-loop busy time and CPU time so far, ms. */
  readonly busyMs: number;
  readonly cpuMs: number;
}

export type FromAgents = { type: 'opening' } | { type: 'registered'; ms: number } | ({ type: 'stats' } & AgentsStats);

const { values } = parseArgs({
  options: { url: { type: 'string' }, agents: { type: 'string' }, 'per-session': { type: 'string' }, 'heartbeat-ms': { type: 'string' } },
});
const url = values.url!;
const agents = Number(values.agents);
const perSession = Number(values['per-session']);
const heartbeatMs = Number(values['heartbeat-ms']);

const inventory = await discoverInventory({ nvidiaSmi: smiOf('h100-8x'), ibRoot: ibRootOf('h100-8x'), noGpu: false, fabrics: { 'ib-a': ['mlx5_0', 'mlx5_1', 'mlx5_2', 'mlx5_3'] } });
const clients: AgentStreamClient[] = Array.from({ length: Math.ceil(agents / perSession) }, () => createAgentStreamClient({ url, insecure: true }));
const stop = new AbortController();
// Every agent waits on the one signal, as ten thousand agents in ten thousand processes would each on their own.
setMaxListeners(Infinity, stop.signal);
let sent = 0;
let registered = 0;
let retries = 0;
let firstError: string | null = null;
let stopping = false;

const send = (msg: FromAgents): void => void process.send!(msg);

/**
 * One agent as the real one keeps its stream: reconnectForever, with the agent's own
 * jittered backoff, so a stream refused in a thundering herd comes back as it would.
 */
function startAgent(i: number, started: number): void {
  const id = `gpu-${String(i).padStart(5, '0')}`;
  const register = registerMessage({ nodeId: id, hostname: id, mgmtIp: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, agentVersion: 'bench', inventory, engineVersions: { vllm: '0.11.0' }, running: [] });
  let everRegistered = false;
  void reconnectForever({
    signal: stop.signal,
    onRetry: (info) => {
      if (stopping) return;
      retries++;
      firstError ??= `agent ${id}: ${info.error === undefined ? 'the control plane ended the stream' : LlmgwError.from(info.error).message}`;
    },
    session: async (accepted, signal) => {
      const out = new PushQueue<AgentMessageInit>();
      out.push(register);
      let timer: NodeJS.Timeout | undefined;
      const beat = (): void => {
        try {
          out.push({ body: { case: 'heartbeat', value: { unixMs: BigInt(Date.now()) } } });
          sent++;
        } catch (err) {
          firstError ??= LlmgwError.from(err).message;
        }
      };
      try {
        for await (const m of clients[Math.floor(i / perSession)]!.open(out, signal)) {
          if (m.body.case !== 'registered') continue;
          accepted();
          timer = setTimeout(() => {
            beat();
            timer = setInterval(beat, heartbeatMs);
          }, Math.random() * heartbeatMs);
          if (!everRegistered && (everRegistered = true) && ++registered === agents) send({ type: 'registered', ms: performance.now() - started });
        }
      } finally {
        clearTimeout(timer);
        out.end();
      }
    },
  });
}

process.on('message', (msg: ToAgents) => {
  if (msg.type === 'stats') {
    const cpu = process.cpuUsage();
    send({ type: 'stats', sent, retries, firstError, busyMs: performance.eventLoopUtilization().active, cpuMs: (cpu.user + cpu.system) / 1000 });
    return;
  }
  stopping = true;
  stop.abort();
  for (const c of clients) c.close();
  process.disconnect();
});

send({ type: 'opening' });
const started = performance.now();
for (let i = 0; i < agents; i++) startAgent(i, started);
