// Simulated GPU nodes (`simulate_nodes`): for each, the real agent role in this process,
// with a simulated nvidia-smi and the sim engine as its vllm, dialling this server's
// agent port. The control plane cannot tell them from real nodes, so `npm start` on a
// machine without GPUs runs the whole fleet path: placement, launch, readiness, routing.
import { accessSync, chmodSync, constants, mkdirSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { agentConfigFrom } from '../agent/config/load.js';
import type { AgentConfig } from '../agent/config/schema.js';
import type { DiscoveryKnobs } from '../agent/discovery/index.js';
import type { Config, SimulateNodeConfig } from '../config/index.js';
import { createLogger } from '../log.js';
import { CONTROL } from '../messages/control.js';
import type { EndpointTable } from '../router/endpoint-table.js';
import type { ActorSystem } from '../runtime/index.js';
import { NVIDIA_SMI_SIM, writeNvidiaSmiWrapper } from '../sim/nvidia-smi-wrapper.js';
import { startAgentWith, type RunningAgent } from './agent.js';

export interface SimulatedNodes {
  /** Stops the control plane, then every simulated node's engines and agent: nothing is left to adopt. */
  close(): Promise<void>;
}

/** Relative to the working directory, beside the agent's default `.llmgw-state/agent`. */
export const SIM_NODES_DIR = '.llmgw-state/sim-nodes';
/** How long the server waits for the placed replicas before it opens its ports anyway. */
const READY_TIMEOUT_MS = 30_000;
const READY_POLL_MS = 200;
const PROGRESS_EVERY_MS = 2_000;

const VLLM_SIM = fileURLToPath(new URL('../sim/vllm-cli.js', import.meta.url));

const log = createLogger('sim-nodes');

/**
 * Starts the simulated nodes once the control plane is up, then waits (bounded) until
 * every placed model has its desired replicas ready and routed to, so the first request
 * after the listening line is answered rather than refused with a 503.
 */
export async function startSimulatedNodes(system: ActorSystem, table: EndpointTable, config: Config): Promise<SimulatedNodes> {
  const control = system.ref(CONTROL);
  // The bound URL: a configured port 0 is a real port by now.
  const server = await control.ask({ type: 'address' });
  ensureExecutable(VLLM_SIM);
  const agents: RunningAgent[] = [];
  const close = async (): Promise<void> => {
    // The control plane first: it would place replacements as the engines stop.
    await system.stop(CONTROL.name).catch((err: unknown) => log.warn('control plane did not stop', { error: err }));
    await Promise.all(agents.map((a) => a.close({ stopEngines: true })));
  };
  // Until the server is up, a SIGTERM or Ctrl-C would end the process at once and leave
  // the engines (each in a process group of its own) running: stop them first, then exit
  // as the signal would have.
  // Ctrl-C under `npm start` arrives twice (see stopOnSignals): the repeat is ignored.
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) return;
    stopping = true;
    log.info('signal received while the simulated nodes start; stopping their engines', { signal });
    void close().finally(() => process.exit(128 + osConstants.signals[signal]));
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  try {
    // Together, so that all have registered when control.settle_ms is over and the
    // first replicas spread over them rather than fill the first node to report.
    const started = await Promise.allSettled(
      config.simulate_nodes.map(async (node, i) => {
        const agent = await startAgentWith(simNodeConfig(node, i, server), simNodeKnobs(node));
        agents.push(agent);
        log.info('simulated node started', { node: node.name, gpus: node.gpus, mgmtAddr: mgmtAddr(i) });
      }),
    );
    const failed = started.find((s) => s.status === 'rejected');
    if (failed) throw failed.reason;
    await untilServing(system, table);
  } catch (err) {
    await close();
    throw err;
  } finally {
    if (!stopping) {
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
    }
  }
  return { close };
}

/**
 * Engines of different nodes bind different loopback addresses (Linux routes all of
 * 127/8 to lo), so two nodes may hand out the same port as two machines would.
 */
const mgmtAddr = (i: number): string => `127.0.0.${2 + i}`;

function simNodeConfig(node: SimulateNodeConfig, i: number, server: string): AgentConfig {
  const dir = resolve(SIM_NODES_DIR, node.name);
  const ibRoot = join(dir, 'infiniband');
  mkdirSync(ibRoot, { recursive: true });
  return agentConfigFrom(
    {
      node_id: node.name,
      server,
      insecure: true,
      mgmt_addr: mgmtAddr(i),
      listen: '127.0.0.1:0',
      state_dir: join(dir, 'agent'),
      nvidia_smi: writeNvidiaSmiWrapper(join(dir, 'nvidia-smi'), { node: node.name, gpus: node.gpus }),
      ib_root: ibRoot,
      engines: { vllm: VLLM_SIM },
      heartbeat_interval_ms: 1_000,
      health_interval_ms: 100,
      watch_interval_ms: 200,
      settle_ms: 500,
      stop_timeout_ms: 5_000,
      drain_grace_ms: 5_000,
      ready_timeout_ms: 60_000,
    },
    `simulate_nodes[${i}] (${node.name})`,
  );
}

function simNodeKnobs(node: SimulateNodeConfig): DiscoveryKnobs {
  return {
    noGpu: `remove ${node.name} from simulate_nodes`,
    nvidiaSmi: `rebuild (npm run build) so that ${NVIDIA_SMI_SIM} exists`,
    ibRoot: `check that ${SIM_NODES_DIR}/${node.name} is writable`,
  };
}

/**
 * The agent execs its vllm directly and records that command line to adopt the engine
 * later, so the sim must be the executable itself; a plain `tsc` build leaves it 0644.
 */
function ensureExecutable(path: string): void {
  try {
    accessSync(path, constants.X_OK);
  } catch {
    chmodSync(path, 0o755);
  }
}

async function untilServing(system: ActorSystem, table: EndpointTable): Promise<void> {
  const control = system.ref(CONTROL);
  const started = Date.now();
  let lastProgress = started;
  for (;;) {
    const [models, replicas] = await Promise.all([control.ask({ type: 'models' }), control.ask({ type: 'replicas' })]);
    // Ready at the control plane is published to the router; routed is probed ready there too.
    const routable = new Set(table.all().flatMap((e) => (e.ready && !e.draining ? [e.id] : [])));
    const missing = models.flatMap((m) => {
      const routed = replicas.filter((r) => r.model === m.name && r.state === 'ready' && routable.has(r.id)).length;
      return routed >= m.desired ? [] : [{ model: m.name, ready: m.ready, routed, desired: m.desired, reason: m.reason }];
    });
    if (missing.length === 0) return log.info('simulated fleet serving', { models: models.map((m) => `${m.name}: ${m.ready}/${m.desired}`), ms: Date.now() - started });
    const now = Date.now();
    if (now - started >= READY_TIMEOUT_MS) return log.warn('simulated replicas not ready in time; opening the ports anyway', { missing, timeoutMs: READY_TIMEOUT_MS });
    if (now - lastProgress >= PROGRESS_EVERY_MS) {
      lastProgress = now;
      log.info('waiting for simulated replicas', { missing });
    }
    await new Promise((r) => setTimeout(r, READY_POLL_MS));
  }
}
