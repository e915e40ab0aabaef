import { EventEmitter } from 'node:events';
import { MessageChannel, Worker } from 'node:worker_threads';
import { transfer, wrap, type Remote } from 'comlink';
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs';
import { AggregatorRegistry, type Registry } from 'prom-client';
import { LlmgwError } from '../errors.js';
import { createLogger } from '../log.js';
import type { ActorDef, ActorRef, SpawnOptions } from './actor.js';
import { CpuPool } from './cpu-pool.js';
import type { SpawnSpec, SysRequest } from './envelope.js';
import type { Address, Message } from './protocol.js';
import type { ActorStats } from './stats.js';
import { stopWaves } from './stop-order.js';
import { RestartTracker, defaultSupervision, type ChildFailure } from './supervision.js';
import type { ThreadControl, WorkerBoot } from './thread-control.js';
import { MAIN_THREAD, ThreadHost, specFor, type SystemServices } from './thread-host.js';

export interface ThreadSpec {
  name: string;
  /**
   * What happens when the thread dies: `respawn` starts a new thread of the same name
   * and restarts its actors there; `fail` takes the process down (loudly).
   */
  onDeath?: 'respawn' | 'fail';
}

export interface ActorSystemOptions {
  threads?: ThreadSpec[];
  askTimeoutMs?: number;
  /** Bound on spawn/stop/stats calls into a worker thread. */
  controlTimeoutMs?: number;
  /** Bound on the whole orderly shutdown. */
  shutdownTimeoutMs?: number;
  /**
   * Called when the runtime cannot go on: a root actor used up its restarts, or a thread
   * with `onDeath: 'fail'` died. The default logs and exits the process with status 70.
   */
  onFatal?: (error: LlmgwError) => void;
}

interface WorkerHandle {
  spec: Required<ThreadSpec>;
  worker: Worker;
  control: Remote<ThreadControl>;
  alive: boolean;
  /** Rejects when the worker exits; every control call races it. */
  death: Promise<never>;
  lastError: Error | undefined;
}

const log = createLogger('runtime');

/**
 * The actor system of one process. It lives on the main thread, owns the worker
 * threads, the authoritative directory (which actor runs where), the spawn records that
 * let a dead thread's actors be restarted, the CPU pool and the shutdown order.
 */
export class ActorSystem implements SystemServices {
  readonly events = new EventEmitter();
  readonly cpu: CpuPool;
  private readonly host: ThreadHost;
  private readonly workers = new Map<string, WorkerHandle>();
  private readonly specs = new Map<string, SpawnSpec>();
  private readonly threadRestarts = new Map<string, RestartTracker>();
  private readonly opts: Required<Omit<ActorSystemOptions, 'threads'>>;
  private closing: Promise<void> | undefined;

  private constructor(opts: ActorSystemOptions) {
    this.opts = {
      askTimeoutMs: opts.askTimeoutMs ?? 5_000,
      controlTimeoutMs: opts.controlTimeoutMs ?? 10_000,
      shutdownTimeoutMs: opts.shutdownTimeoutMs ?? 10_000,
      onFatal: opts.onFatal ?? defaultFatal,
    };
    this.host = new ThreadHost({ thread: MAIN_THREAD, askTimeoutMs: this.opts.askTimeoutMs, system: this });
    this.cpu = new CpuPool(new URL('../tasks/index.js', import.meta.url).href);
  }

  static async start(opts: ActorSystemOptions = {}): Promise<ActorSystem> {
    const system = new ActorSystem(opts);
    for (const t of opts.threads ?? []) {
      if (t.name === MAIN_THREAD || system.workers.has(t.name)) {
        throw new LlmgwError('LLMGW_INVALID_REQUEST', `thread name '${t.name}' is reserved or used twice`);
      }
      await system.startWorker({ name: t.name, onDeath: t.onDeath ?? 'respawn' });
    }
    return system;
  }

  get threads(): string[] {
    return [MAIN_THREAD, ...this.workers.keys()];
  }

  async spawn<M extends Message, S, A>(def: ActorDef<M, S, A>, opts: SpawnOptions<M, A>): Promise<ActorRef<M>> {
    await this.spawnSpec(specFor(def, opts, null, MAIN_THREAD));
    return this.host.ref(opts.address);
  }

  /** A ref to the actor at `address`, of the address's protocol. */
  ref<M extends Message>(address: Address<M>): ActorRef<M> {
    return this.host.ref(address);
  }

  /** Where an actor runs now, or undefined. */
  where(name: string): string | undefined {
    return this.host.where(name);
  }

  async stop(name: string): Promise<void> {
    const thread = this.host.where(name);
    if (thread === undefined) return;
    if (thread === MAIN_THREAD) return this.host.stopLocal(name);
    const h = this.workers.get(thread);
    if (h) await this.call(h, 'stop', (c) => c.stop(name));
  }

  async stats(): Promise<ActorStats[]> {
    const all = await Promise.all([
      this.host.stats(),
      ...[...this.workers.values()].filter((h) => h.alive).map((h) => this.call(h, 'stats', (c) => c.stats()).catch(() => [])),
    ]);
    return all.flat().sort((a, b) => a.thread.localeCompare(b.thread) || a.name.localeCompare(b.name));
  }

  /** Every thread's runtime metrics merged into one registry. */
  async metrics(): Promise<Registry> {
    const parts = await Promise.all([
      this.host.registry.getMetricsAsJSON(),
      ...[...this.workers.values()].filter((h) => h.alive).map((h) => this.call(h, 'metrics', (c) => c.metrics()).catch(() => [])),
    ]);
    return AggregatorRegistry.aggregate(parts);
  }

  /**
   * Orderly shutdown: refuse new spawns, stop actors in dependency order (each drains
   * its mailbox and flushes before those it depends on stop), then end the threads.
   */
  shutdown(): Promise<void> {
    this.closing ??= this.doShutdown();
    return this.closing;
  }

  private async doShutdown(): Promise<void> {
    const started = Date.now();
    const { waves, cycle } = stopWaves([...this.specs.values()]);
    if (cycle.length > 0) log.warn('actors depend on each other in a cycle; stopping them together', { actors: cycle });
    const deadline = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), this.opts.shutdownTimeoutMs).unref());
    for (const wave of waves) {
      const stopWave = async (): Promise<void> => {
        // What the previous wave sent while draining may still be in flight between
        // threads; it must land in these mailboxes before they stop.
        await this.barrier().catch((err: unknown) => log.warn('shutdown barrier failed', { error: err }));
        await Promise.all(wave.map((n) => this.stop(n).catch((err: unknown) => log.error('stop failed', { actor: n, error: err }))));
      };
      const result = await Promise.race([stopWave(), deadline]);
      if (result === 'timeout') {
        log.error('shutdown timed out; remaining actors are abandoned', { timeoutMs: this.opts.shutdownTimeoutMs, wave });
        break;
      }
    }
    await this.cpu.destroy();
    await Promise.all(
      [...this.workers.values()].map(async (h) => {
        h.alive = false;
        await h.worker.terminate();
      }),
    );
    log.debug('actor system stopped', { ms: Date.now() - started });
  }

  /** Resolves once every envelope posted by any thread so far has been received. */
  async barrier(): Promise<void> {
    await Promise.all([this.host.barrier(), ...[...this.workers.values()].filter((h) => h.alive).map((h) => this.call(h, 'barrier', (c) => c.barrier()))]);
  }

  // ---- SystemServices (requests from actors on any thread) ---------------------------

  handle(req: SysRequest): Promise<unknown> {
    switch (req.op) {
      case 'spawn':
        return this.spawnSpec(req.spec);
      case 'stop':
        return this.stop(req.name);
      case 'cpu':
        return this.cpu.run(req.task, req.data);
    }
  }

  rootFailure(failure: ChildFailure): void {
    this.events.emit('escalation', failure);
    this.opts.onFatal(
      new LlmgwError('LLMGW_ESCALATED', `actor '${failure.child}' (${failure.kind} on ${failure.thread}) kept failing and has no supervisor left: ${failure.error.message}`, { ...failure }),
    );
  }

  directoryChanged(name: string, thread: string | null): void {
    if (thread === null) this.specs.delete(name);
    this.host.broadcast({ k: 'dir', name, thread });
  }

  // ---- internals --------------------------------------------------------------------

  private async spawnSpec(spec: SpawnSpec): Promise<void> {
    if (this.closing) throw new LlmgwError('LLMGW_SHUTTING_DOWN', `cannot spawn '${spec.name}': the system is shutting down`);
    if (this.specs.has(spec.name)) throw new LlmgwError('LLMGW_ACTOR_EXISTS', `an actor named '${spec.name}' already exists`);
    this.specs.set(spec.name, spec); // reserve the name before any await
    try {
      if (spec.thread === MAIN_THREAD) {
        await this.host.spawnLocal(spec);
      } else {
        const h = this.workers.get(spec.thread);
        if (!h) throw new LlmgwError('LLMGW_INVALID_REQUEST', `cannot spawn '${spec.name}' on thread '${spec.thread}': no such thread (have ${this.threads.join(', ')})`);
        await this.call(h, 'spawn', (c) => c.spawn(spec));
      }
    } catch (err) {
      this.specs.delete(spec.name);
      throw LlmgwError.from(err);
    }
    this.host.setDirectory(spec.name, spec.thread);
  }

  private async startWorker(spec: Required<ThreadSpec>): Promise<WorkerHandle> {
    const { port1, port2 } = new MessageChannel();
    const boot: WorkerBoot = { thread: spec.name, askTimeoutMs: this.opts.askTimeoutMs, port: port2 };
    const worker = new Worker(new URL('./worker-main.js', import.meta.url), { workerData: boot, transferList: [port2] });
    let die!: (e: LlmgwError) => void;
    const death = new Promise<never>((_, reject) => (die = reject));
    death.catch(() => {}); // observed by the calls that race it
    const h: WorkerHandle = { spec, worker, control: wrap<ThreadControl>(nodeEndpoint(worker)), alive: true, death, lastError: undefined };
    worker.on('error', (err) => (h.lastError = err));
    worker.on('exit', (code) => {
      h.alive = false;
      die(new LlmgwError('LLMGW_THREAD_DIED', `thread '${spec.name}' exited (code ${code})`, { thread: spec.name, code }));
      if (!this.closing) void this.threadDied(h, code);
    });
    this.workers.set(spec.name, h);
    this.host.connect(spec.name, port1);
    // Mesh: a direct link to every other live worker, so worker-to-worker messages take one hop.
    for (const other of this.workers.values()) {
      if (other === h || !other.alive) continue;
      const { port1: a, port2: b } = new MessageChannel();
      await this.call(other, 'connect', (c) => c.connect(spec.name, transfer(a, [a])));
      await this.call(h, 'connect', (c) => c.connect(other.spec.name, transfer(b, [b])));
    }
    await this.call(h, 'seed directory', (c) => c.seedDirectory(this.host.directoryEntries()));
    return h;
  }

  private async threadDied(h: WorkerHandle, code: number): Promise<void> {
    const thread = h.spec.name;
    log.error('worker thread died', { thread, code, error: h.lastError });
    this.host.threadDied(thread);
    for (const other of this.workers.values()) {
      if (other !== h && other.alive) void this.call(other, 'thread died', (c) => c.threadDied(thread)).catch(() => {});
    }
    const orphans = [...this.specs.values()].filter((s) => s.thread === thread);
    for (const s of orphans) this.specs.delete(s.name);
    this.events.emit('thread-died', { thread, code, actors: orphans.map((s) => s.name) });
    let tracker = this.threadRestarts.get(thread);
    if (!tracker) this.threadRestarts.set(thread, (tracker = new RestartTracker(defaultSupervision)));
    const backoff = tracker.onFailure(Date.now());
    if (h.spec.onDeath === 'fail' || backoff === null) {
      this.opts.onFatal(new LlmgwError('LLMGW_THREAD_DIED', `worker thread '${thread}' died (exit code ${code}) with actors ${orphans.map((s) => s.name).join(', ') || '(none)'}${backoff === null ? ' and keeps dying' : ''}`, { thread, code }));
      return;
    }
    await new Promise((r) => setTimeout(r, backoff));
    if (this.closing) return;
    try {
      await this.startWorker(h.spec);
      for (const s of orphans) await this.spawnSpec({ ...s, restarts: s.restarts + 1 });
      log.warn('worker thread restarted with its actors', { thread, actors: orphans.map((s) => s.name) });
      this.events.emit('thread-respawned', { thread, actors: orphans.map((s) => s.name) });
    } catch (err) {
      this.opts.onFatal(new LlmgwError('LLMGW_THREAD_DIED', `worker thread '${thread}' could not be restarted: ${LlmgwError.from(err).message}`, { thread }));
    }
  }

  /** A control call into a worker, bounded by a timeout and by the worker's death. */
  private call<R>(h: WorkerHandle, what: string, fn: (c: Remote<ThreadControl>) => Promise<R> | R): Promise<R> {
    if (!h.alive) return Promise.reject(new LlmgwError('LLMGW_THREAD_DIED', `thread '${h.spec.name}' is not running`));
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new LlmgwError('LLMGW_ASK_TIMEOUT', `${what} on thread '${h.spec.name}' got no answer within ${this.opts.controlTimeoutMs} ms`)),
        this.opts.controlTimeoutMs,
      );
    });
    return Promise.race([Promise.resolve(fn(h.control)), h.death, timeout]).finally(() => clearTimeout(timer)) as Promise<R>;
  }
}

function defaultFatal(error: LlmgwError): void {
  log.error('fatal: the runtime cannot continue', { error, details: error.details });
  process.exit(70); // EX_SOFTWARE
}

