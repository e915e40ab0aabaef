import { resolve } from 'node:path';
import { accounting } from '../actors/accounting/accounting.js';
import { catalogLabels } from '../accounting/model-labels.js';
import { UsageBatcher, usageBatcherMetrics } from '../accounting/usage-batcher.js';
import { admissionActor } from '../actors/admission/admission-actor.js';
import { controlActor } from '../actors/control/control-actor.js';
import { endpointRegistry } from '../actors/endpoints/endpoint-registry.js';
import { healthPoller } from '../actors/endpoints/health-poller.js';
import { simEngineActor } from '../actors/sim/sim-engine-actor.js';
import { startSimulatedNodes, type SimulatedNodes } from './sim-nodes.js';
import { createAdminPort, type DrainStatus } from '../admin/admin-port.js';
import type { ReloadResult } from '../admin/reload-result.js';
import { loadConfig, type Config } from '../config/index.js';
import type { UnitsConfig } from '../config/types.js';
import { AccessLog } from '../dataport/access-log.js';
import { createDataPort } from '../dataport/data-port.js';
import { LlmgwError } from '../errors.js';
import { stopOnSignals } from '../lifecycle.js';
import { createLogger, setLogLevel } from '../log.js';
import { placedModels } from '../control/catalog.js';
import { ACCOUNTING } from '../messages/accounting.js';
import type { PlacedModel } from '../messages/catalog.js';
import { CONTROL } from '../messages/control.js';
import { ADMISSION } from '../messages/admission.js';
import { ENDPOINT_REGISTRY, healthPollerAddress, type EndpointProbe } from '../messages/endpoints.js';
import { simEngineAddress } from '../messages/sim.js';
import { drain, listen } from '../net/http-listen.js';
import { Catalog } from '../router/catalog.js';
import { ENGINE_DEFAULTS } from '../sim/engine.js';
import { Admission } from '../router/admission/admission.js';
import { admissionMetrics } from '../router/admission/admission-metrics.js';
import { endpointMetrics } from '../router/endpoint-metrics.js';
import { EndpointTable, type EndpointState } from '../router/endpoint-table.js';
import { PrefixIndex } from '../router/scheduler/prefix-index.js';
import { buildProfiles } from '../router/scheduler/profiles.js';
import { Scheduler } from '../router/scheduler/scheduler.js';
import { createScorers } from '../router/scheduler/scorers.js';
import { ActorSystem, type ThreadSpec } from '../runtime/index.js';
import { reload, type Reloadable } from './reload.js';
import { storeActor } from '../actors/tenancy/store-actor.js';
import { TENANCY_STORE } from '../messages/tenancy.js';
import type { DataPortTenancy } from '../dataport/tenancy-gate.js';
import { Directory } from '../tenancy/directory.js';
import { SqliteStore } from '../tenancy/store/sqlite-store.js';
import { JournalAppender, journalMetrics } from '../tenancy/journal-appender.js';
import { journalDirOf } from '../tenancy/journal-segments.js';

export interface ServerFlags {
  configPath?: string | undefined;
  listen?: string | undefined;
  adminListen?: string | undefined;
}

export interface RunningServer {
  url: string;
  adminUrl: string;
  system: ActorSystem;
  close(): Promise<void>;
  /** Reads the config file again and applies what can change in place (SIGHUP, `ctl reload`). */
  reload(): Promise<ReloadResult>;
}

const log = createLogger('server');
/** How often queued requests are checked for release and timeout (completions also release). */
const ADMISSION_TICK_MS = 50;
/**
 * The store reads the whole usage journal into the database before it answers the
 * snapshot (budgets must count every record), which after a long outage is minutes of
 * records: its first answer may take that long.
 */
const SNAPSHOT_TIMEOUT_MS = 300_000;

/**
 * Starts the server role: the actor system and its threads, simulated engines if the
 * config asks for them, one health poller per endpoint, then the data and admin ports.
 * The ports open only after every endpoint has been probed once, so the first request
 * already has a routing table.
 */
export async function startServer(flags: ServerFlags): Promise<RunningServer> {
  const config = loadConfig({ path: flags.configPath, overrides: { listen: flags.listen, admin_listen: flags.adminListen } });
  setLogLevel(config.log_level);
  const placed = placedModels(config);
  const threads: ThreadSpec[] = [{ name: 'telemetry', onDeath: 'respawn' }];
  if (config.simulate.length > 0) threads.push({ name: 'engines', onDeath: 'respawn' });
  // `respawn`: a new control actor rebuilds everything from the agents' next Registers.
  if (placed.length > 0) threads.push({ name: 'control', onDeath: 'respawn' });
  // `respawn`: the store reopens its file and goes on reading the journal where its last commit left it.
  if (config.tenancy) threads.push({ name: 'tenancy', onDeath: 'respawn' });
  const system = await ActorSystem.start({ threads, askTimeoutMs: config.runtime.ask_timeout_ms, shutdownTimeoutMs: config.runtime.shutdown_timeout_ms });
  const r = config.router;
  const table = new EndpointTable({
    connectTimeoutMs: r.connect_timeout_ms,
    health: {
      cooldownFailures: r.cooldown.failures,
      cooldownMs: r.cooldown.ms,
      breakerFailures: r.breaker.failures,
      openMs: r.breaker.open_ms,
      maxOpenMs: r.breaker.max_open_ms,
    },
    onBreakerChange: (endpoint, from, to) => log[to === 'closed' ? 'info' : 'warn']('circuit breaker', { endpoint, from, to }),
    // The system is started just above; a lost ask is replaced by the next change or poll.
    ...(r.load_refresh_ms > 0 && { refresh: { ms: r.load_refresh_ms, kvCeiling: r.admission.kv_ceiling, ask: (id: string) => system.ref(healthPollerAddress(id)).tell({ type: 'scrape' }) } }),
  });
  let simNodes: SimulatedNodes | null = null;
  let tenancy: (DataPortTenancy & { units: Map<string, UnitsConfig> }) | undefined;
  const admissions = r.admission.enabled ? new Map(config.models.map((m) => [m.name, new Admission(m.name, table, r.admission, r.stale_after_ms)])) : null;
  try {
    await system.spawn(endpointRegistry, { address: ENDPOINT_REGISTRY, args: { table, configured: config.endpoints.map((e) => e.id), onChange: (added, removed) => syncPollers(system, table, config, added, removed) } });
    if (admissions) await system.spawn(admissionActor, { address: ADMISSION, args: { admissions, tickMs: ADMISSION_TICK_MS } });
    await system.spawn(accounting, { address: ACCOUNTING, thread: 'telemetry', args: { recent: 1_000, models: catalogLabels(config.models) } });
    if (config.tenancy) tenancy = await startTenancy(system, config);
    await startSimulatedEngines(system, table, config);
    for (const e of config.endpoints) {
      table.add({ id: e.id, url: e.url, models: e.models, weight: e.weight, priority: e.priority, pool: e.pool ?? null, batchSize: e.max_num_seqs ?? null, stepBudget: e.max_num_batched_tokens ?? null, enginePriority: e.priority_scheduling ?? null, gpus: e.gpus });
    }
    await startPollers(system, table.all(), config);
    if (placed.length > 0) await startControlPlane(system, config, placed);
    if (config.simulate_nodes.length > 0) simNodes = await startSimulatedNodes(system, table, config);
  } catch (err) {
    await system.shutdown();
    throw err;
  }

  const prefixIndex = new PrefixIndex(r.prefix.index_entries);
  const usage = system.ref(ACCOUNTING);
  const records = new UsageBatcher(usage);
  // Decided once: the level is fixed at start, so the request path branches on nothing.
  const access = config.access_log && log.enabled('info') ? new AccessLog() : null;
  const dataPort = createDataPort({
    catalog: new Catalog(config.models),
    table,
    scheduler: new Scheduler(),
    profiles: buildProfiles(r.profiles, createScorers({ staleAfterMs: r.stale_after_ms, kvCeiling: r.admission.kv_ceiling, prefixIndex })),
    modelProfiles: new Map(config.models.flatMap((m) => (m.routing_profile ? [[m.name, m.routing_profile] as const] : []))),
    prefixIndex,
    router: r,
    cpu: system.cpu,
    usage: access
      ? (record) => {
          records.add(record);
          access.add(record);
        }
      : records.add,
    admissions,
    ...(tenancy ? { tenancy } : {}),
  });
  let drainingSince: number | null = null;
  const drainStatus = (): DrainStatus | null =>
    drainingSince === null ? null : { inFlight: dataPort.inFlight(), cutInMs: Math.max(0, drainingSince + config.runtime.shutdown_timeout_ms - Date.now()) };
  const reloadable: Reloadable = {
    path: flags.configPath,
    overrides: { listen: flags.listen, admin_listen: flags.adminListen },
    started: config,
    dataPort,
    table,
    registry: system.ref(ENDPOINT_REGISTRY),
    accounting: usage,
    control: placed.length > 0 ? system.ref(CONTROL) : null,
    admissions,
    units: tenancy ? tenancy.units : null,
  };
  // One reload at a time: a second waits for the first, then reads the file again.
  let reloading: Promise<unknown> = Promise.resolve();
  const reloadNow = (): Promise<ReloadResult> => {
    const run = reloading.then(() => reload(reloadable));
    reloading = run.catch(() => undefined);
    return run;
  };
  const adminPort = createAdminPort({
    system,
    table,
    token: config.admin_token,
    drain: drainStatus,
    registries: [endpointMetrics(table), usageBatcherMetrics(records), ...(admissions ? [admissionMetrics(admissions)] : []), ...(tenancy ? [journalMetrics(tenancy.journal)] : [])],
    accounting: usage,
    flushUsage: records.flush,
    admission: admissions ? system.ref(ADMISSION) : null,
    control: reloadable.control,
    reload: reloadNow,
    ...(tenancy ? { tenancy: { store: system.ref(TENANCY_STORE), applyChange: (c) => tenancy!.directory.apply(c) } } : {}),
  });
  const graceMs = config.runtime.shutdown_timeout_ms;
  const stop = async (): Promise<void> => {
    drainingSince = Date.now();
    // The admin port stays up through the drain, so that it can be watched (/health).
    await drain(dataPort.server, graceMs, () => {
      const cut = dataPort.cutAll(new LlmgwError('LLMGW_SHUTTING_DOWN', `the server is shutting down and its grace period of ${graceMs} ms (runtime.shutdown_timeout_ms) is over; retry`));
      if (cut > 0) log.warn('shutdown grace period over: requests still in flight were cut', { cut, graceMs });
    });
    await drain(adminPort, 1_000);
    await simNodes?.close();
    // Every request has ended and been journaled: the store takes in the rest as it stops.
    tenancy?.journal.close();
    records.flush();
    access?.flush();
    await system.shutdown();
    await table.close();
  };
  let url: string;
  let adminUrl: string;
  try {
    url = await listen(dataPort.server, config.listen, { key: 'listen', also: ['--listen', 'LLMGW_LISTEN'] });
    adminUrl = await listen(adminPort, config.admin_listen, { key: 'admin_listen', also: ['--admin-listen', 'LLMGW_ADMIN_LISTEN'] });
  } catch (err) {
    // A port that cannot open must not leave the threads and pollers running: they
    // would keep a process that serves nothing alive.
    await stop();
    throw err;
  }

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closing ??= (async () => {
      log.info('shutting down: refusing new connections, letting requests in flight finish', { inFlight: dataPort.inFlight(), graceMs });
      await stop();
      log.info('stopped');
    })());
  return { url, adminUrl, system, close, reload: reloadNow };
}

/** Runs the server until SIGTERM or SIGINT, then shuts down in order and exits. */
export async function runServer(flags: ServerFlags): Promise<void> {
  process.title = 'llmgw server';
  const server = await startServer(flags);
  // Before the ready line: a supervisor may send SIGTERM the moment it reads it, and
  // without the handler that signal ends the process unclean (store locked, journal unflushed).
  stopOnSignals(() => server.close(), log);
  // One line on stdout that scripts and specs wait for; the same as a log line for collectors.
  process.stdout.write(`llmgw server listening on ${server.url} (admin ${server.adminUrl})\n`);
  log.info('listening', { url: server.url, admin: server.adminUrl, pid: process.pid });
  // SIGHUP re-reads the config, as daemons do; a bad file keeps the running one (and says why).
  process.on('SIGHUP', () => {
    log.info('SIGHUP: reloading the config');
    server.reload().catch((err: unknown) => log.error('reload failed', { error: err }));
  });
}

/**
 * The tenancy store on its own thread, and the main thread's copy of what the request
 * path reads: the directory (keys, tree, limits, the spend of the current periods) and
 * the journal every request's record is appended to.
 */
async function startTenancy(system: ActorSystem, config: Config): Promise<DataPortTenancy & { units: Map<string, UnitsConfig> }> {
  const t = config.tenancy!;
  const journalDir = journalDirOf(t.store);
  // Opened (and migrated) once here first: a store that cannot be opened is a start-up
  // error with its path and reason at once, where the actor would fail on its thread,
  // be restarted a few times and only then take the server down.
  SqliteStore.open(t.store).close();
  const store = await system.spawn(storeActor, { address: TENANCY_STORE, thread: 'tenancy', args: { path: t.store, journalDir, retentionDays: t.retention_days } });
  const snapshot = await store.ask({ type: 'snapshot' }, { timeoutMs: SNAPSHOT_TIMEOUT_MS });
  const directory = new Directory(snapshot, config.router.admission.bands.map((b) => b.name));
  log.info('tenancy on', { store: t.store, keys: snapshot.keys.length, projects: snapshot.projects.length });
  return { directory, journal: JournalAppender.open(journalDir), settings: t, units: new Map(config.models.map((m) => [m.name, m.units])) };
}

async function startSimulatedEngines(system: ActorSystem, table: EndpointTable, config: Config): Promise<void> {
  for (const s of config.simulate) {
    for (let i = 0; i < s.replicas; i++) {
      const id = `sim-${s.model}-${i}`;
      const ref = await system.spawn(simEngineActor, {
        address: simEngineAddress(s.model, i),
        thread: 'engines',
        args: { model: s.model, flavor: s.flavor, speed: s.speed, seed: s.seed + i, maxNumSeqs: s.max_num_seqs, numGpuBlocks: s.num_gpu_blocks },
      });
      const url = await ref.ask({ type: 'address' }, { timeoutMs: 30_000 });
      // Started here: its batch size and step budget are known, not learnt.
      table.add({ id, url, models: [s.model], weight: 1, priority: 0, pool: null, batchSize: s.max_num_seqs ?? ENGINE_DEFAULTS.maxNumSeqs, stepBudget: Math.max(ENGINE_DEFAULTS.maxNumBatchedTokens, s.max_num_seqs ?? ENGINE_DEFAULTS.maxNumSeqs) });
      log.info('simulated engine started', { endpoint: id, url });
    }
  }
}

/**
 * The control plane on its own thread: the agent stream, the reconciler, and through
 * the registry the replicas it places. Plaintext on the agent port is the operator's
 * explicit choice, and said so at every start.
 */
async function startControlPlane(system: ActorSystem, config: Config, models: PlacedModel[]): Promise<void> {
  const c = config.control;
  if (config.agent_insecure) log.warn('agent stream is plaintext (agent_insecure: true): any host that reaches agent_listen can register as a node; use agent_tls outside a trusted network', { agentListen: config.agent_listen });
  await system.spawn(controlActor, {
    address: CONTROL,
    thread: 'control',
    dependsOn: [ENDPOINT_REGISTRY],
    args: {
      models,
      listen: config.agent_listen,
      tls: config.agent_tls ? { ca: config.agent_tls.ca, cert: config.agent_tls.cert, key: config.agent_tls.key } : null,
      intervalMs: c.interval_ms,
      unreachableAfterMs: c.unreachable_after_ms,
      lostAfterMs: c.lost_after_ms,
      drainGraceMs: c.drain_grace_ms,
      settleMs: c.settle_ms,
      portRange: [c.port_range[0], c.port_range[1]],
      rosterPath: resolve(config.state_dir, 'nodes.json'),
    },
  });
}

/**
 * Pollers follow the placed replicas: stopped with a replica that left, started (and
 * probed once, into the table) with one that came, so that the registry's answer to
 * the control plane means the router routes to the new ones.
 */
async function syncPollers(system: ActorSystem, table: EndpointTable, config: Config, added: readonly EndpointState[], removed: readonly string[]): Promise<void> {
  await Promise.all(removed.map((id) => system.stop(healthPollerAddress(id).name).catch(() => undefined)));
  const probes = await startPollers(system, added, config);
  for (const p of probes) table.apply(p);
}

async function startPollers(system: ActorSystem, endpoints: readonly EndpointState[], config: Config): Promise<EndpointProbe[]> {
  const pollers = await Promise.all(
    endpoints.map((e) =>
      system.spawn(healthPoller, {
        address: healthPollerAddress(e.id),
        thread: 'telemetry',
        dependsOn: [ENDPOINT_REGISTRY],
        args: {
          id: e.id,
          url: e.url,
          models: [...e.models],
          intervalMs: config.router.poll_interval_ms,
          timeoutMs: config.router.connect_timeout_ms,
          registry: ENDPOINT_REGISTRY,
        },
      }),
    ),
  );
  // A first probe of everything before the ports open; an endpoint that is down now is
  // reported (and retried by its poller), not waited for.
  const probes = await Promise.all(pollers.map((p) => p.ask({ type: 'poll-now' }, { timeoutMs: config.router.connect_timeout_ms * 2 + 1_000 })));
  for (const p of probes) if (!p.ready) log.warn('endpoint not ready when first probed', { endpoint: p.id, reason: p.reason });
  return probes;
}
