// The agent role: the supervisor actor on its own worker thread, the fleet link beside it
// when a server is configured, then the local control interface. One per GPU node.
import { hostname } from 'node:os';
import { fleetLinkActor } from '../actors/agent/fleet-link-actor.js';
import { supervisorActor } from '../actors/agent/supervisor-actor.js';
import { stopOnSignals } from '../lifecycle.js';
import { LOG_LEVELS } from '../config/schema.js';
import type { LogLevel } from '../config/types.js';
import { LlmgwError } from '../errors.js';
import { createLogger, setLogLevel } from '../log.js';
import { drain, listen } from '../net/http-listen.js';
import { FLEET_LINK, SUPERVISOR, type SupervisorMsg } from '../messages/agent.js';
import { ActorSystem, type ActorRef } from '../runtime/index.js';
import { loadAgentConfig } from '../agent/config/load.js';
import type { AgentConfig } from '../agent/config/schema.js';
import { checkIbRoot, configKnobs, discoverInventory, type DiscoveryKnobs } from '../agent/discovery/index.js';
import { createControlPort } from '../agent/control-port.js';

export interface AgentFlags {
  configPath?: string | undefined;
  listen?: string | undefined;
}

export interface RunningAgent {
  url: string;
  /**
   * Closes the control interface and the stream. The engines are left running for the
   * next agent to adopt, unless `stopEngines`: then each is stopped (drained first) before.
   */
  close(opts?: { stopEngines?: boolean }): Promise<void>;
}

const log = createLogger('agent');

/**
 * Starts the agent. The port opens only after the supervisor has dealt with what a
 * previous agent left (adopted it, or killed what it could not identify), so the first
 * caller sees the node as it is.
 */
export async function startAgent(flags: AgentFlags): Promise<RunningAgent> {
  const config = loadAgentConfig(flags.configPath, { listen: flags.listen });
  // As on the server, LLMGW_LOG_LEVEL beats the file: one knob for every role's logs.
  setLogLevel(logLevelFromEnv() ?? config.log_level);
  return startAgentWith(config, configKnobs(flags.configPath ?? 'agent.yaml (passed with --config)'));
}

/**
 * Starts an agent from a validated config (agentConfigFrom), in this process beside
 * whatever else runs in it: the log level stays the process's.
 */
export async function startAgentWith(config: AgentConfig, knobs: DiscoveryKnobs): Promise<RunningAgent> {
  await checkHardware(config, knobs);
  // `respawn`: a new thread restarts the supervisor, whose init adopts the engines again.
  const system = await ActorSystem.start({ threads: [{ name: 'agent', onDeath: 'respawn' }] });
  try {
    const supervisor = await system.spawn(supervisorActor, {
      address: SUPERVISOR,
      thread: 'agent',
      args: {
        stateDir: config.state_dir,
        launch: { ...config.engines, rendezvousTimeoutMs: config.rendezvous_timeout_ms },
        timing: {
          stopTimeoutMs: config.stop_timeout_ms,
          readyTimeoutMs: config.ready_timeout_ms,
          healthIntervalMs: config.health_interval_ms,
          settleMs: config.settle_ms,
          watchIntervalMs: config.watch_interval_ms,
          drainGraceMs: config.drain_grace_ms,
        },
        outputLines: config.output_lines,
        subscribers: config.server === undefined ? [] : [FLEET_LINK],
      },
    });
    // Recovery may stop a few unidentifiable engines, each given stop_timeout_ms.
    await supervisor.ask({ type: 'list' }, { timeoutMs: Math.max(60_000, config.stop_timeout_ms * 10) });
    if (config.server === undefined) {
      log.info('no server configured: running standalone, driven through the local control interface');
    } else {
      if (config.insecure) log.warn('the stream to the control plane is plaintext (insecure: true): inventory and commands travel unencrypted and unauthenticated', { server: config.server });
      // After recovery, so the first Register reports the adopted engines.
      await system.spawn(fleetLinkActor, { address: FLEET_LINK, thread: 'agent', args: { config, knobs }, dependsOn: [SUPERVISOR] });
    }
    const server = createControlPort({ supervisor, config, knobs });
    const url = await listen(server, config.listen, { key: 'listen', also: ['--listen'] });
    let closing: Promise<void> | undefined;
    const close = (opts: { stopEngines?: boolean } = {}): Promise<void> =>
      (closing ??= (async () => {
        await drain(server, 1_000);
        if (opts.stopEngines) await stopEngines(supervisor, config.drain_grace_ms + config.stop_timeout_ms);
        // The supervisor's stop lets go of the engines without stopping them (see runAgent).
        await system.shutdown();
      })());
    return { url, close };
  } catch (err) {
    await system.shutdown();
    throw err;
  }
}

/**
 * Stops every shard at once and waits until none is left running. The supervisor
 * answers a stop at once (no handler waits on a process), so its list is polled.
 */
async function stopEngines(supervisor: ActorRef<SupervisorMsg>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (const s of await supervisor.ask({ type: 'list' })) {
    const out = await supervisor.ask({ type: 'stop', id: s.id });
    if (!out.ok) log.warn('engine did not stop', { shard: s.id, error: out.error.message });
  }
  for (;;) {
    const running = (await supervisor.ask({ type: 'list' })).filter((s) => s.state !== 'stopped' && s.state !== 'failed');
    if (running.length === 0) return;
    if (Date.now() > deadline) return log.warn('engines still running after stopping them', { shards: running.map((s) => s.id), timeoutMs });
    await new Promise((r) => setTimeout(r, STOP_POLL_MS));
  }
}

const STOP_POLL_MS = 100;

/**
 * Discovery once before anything starts: a node that cannot run nvidia-smi (without
 * no_gpu), a mistyped ib_root or fabric labels that name no adapter fail the start, not
 * the first inventory call long after.
 */
async function checkHardware(config: AgentConfig, knobs: DiscoveryKnobs): Promise<void> {
  await checkIbRoot(config.ib_root, knobs.ibRoot);
  const inventory = await discoverInventory({ nvidiaSmi: config.nvidia_smi, ibRoot: config.ib_root, noGpu: config.no_gpu, fabrics: config.fabrics, knobs });
  log.info('hardware discovered', { gpus: inventory.gpus.length, hcas: inventory.hcas.length, noGpu: config.no_gpu, warnings: inventory.warnings });
}

/**
 * Runs the agent until SIGTERM or SIGINT. Shutting down closes the control interface and
 * the stream to the control plane, and LEAVES THE ENGINES RUNNING: an agent restart (an upgrade, a crash, a config change)
 * must not take served traffic down, and the state files let the next agent adopt them.
 * Stopping engines is the control plane's decision, made through the stream (or DELETE).
 */
export async function runAgent(flags: AgentFlags): Promise<void> {
  process.title = `llmgw agent ${hostname()}`;
  const agent = await startAgent(flags);
  // One line on stdout that scripts and specs wait for; the same as a log line for collectors.
  process.stdout.write(`llmgw agent listening on ${agent.url}\n`);
  log.info('listening', { url: agent.url, pid: process.pid });
  stopOnSignals(() => agent.close(), log, 'signal received; leaving engines running for the next agent to adopt');
}

function logLevelFromEnv(): LogLevel | null {
  const v = process.env.LLMGW_LOG_LEVEL;
  if (v === undefined) return null;
  if (!(LOG_LEVELS as readonly string[]).includes(v)) throw new LlmgwError('LLMGW_CONFIG_INVALID', `env LLMGW_LOG_LEVEL: must be one of ${LOG_LEVELS.join(', ')}, not '${v}'`);
  return v as LogLevel;
}
