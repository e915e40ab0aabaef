import type { MessagePort, TransferListItem } from 'node:worker_threads';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { LlmgwError, type SerializedError } from '../errors.js';
import { createLogger, type Logger } from '../log.js';
import { resolveDef, type ActorContext, type ActorDef, type ActorRef, type AskOptions, type CpuRunner, type SpawnOptions } from './actor.js';
import { ActorCell, type CellHost, type Reply } from './actor-cell.js';
import type { Envelope, SpawnSpec, SysRequest } from './envelope.js';
import { address, type Address, type Message } from './protocol.js';
import type { ChildFailure, SupervisorDecision } from './supervision.js';
import type { ActorStats } from './stats.js';

export const MAIN_THREAD = 'main';
/** Reserved address of the system itself: where root actors escalate. */
export const ROOT = '$root';

// A message bounced between threads more often than this names an actor no thread has.
const MAX_HOPS = 3;

interface Pending {
  resolve(v: unknown): void;
  reject(e: LlmgwError): void;
  timer: NodeJS.Timeout;
  /** Thread that holds the callee, so a dead thread fails its callers at once. */
  thread: string | undefined;
}

/** A connection to another thread. Envelopes are batched: one postMessage per microtask turn. */
class Link {
  private outbox: Envelope[] = [];
  private transfer: TransferListItem[] = [];
  private queued = false;

  constructor(
    readonly thread: string,
    readonly port: MessagePort,
    private readonly onCloneError: (env: Envelope, err: unknown) => void,
  ) {}

  post(env: Envelope, transfer?: TransferListItem[]): void {
    this.outbox.push(env);
    if (transfer !== undefined && transfer.length > 0) this.transfer.push(...transfer);
    if (!this.queued) {
      this.queued = true;
      queueMicrotask(this.flush);
    }
  }

  private readonly flush = (): void => {
    const batch = this.outbox;
    const transfer = this.transfer;
    this.outbox = [];
    this.transfer = [];
    this.queued = false;
    try {
      this.port.postMessage(batch, transfer);
    } catch {
      // One uncloneable message must not sink the others: resend one by one.
      for (const env of batch) {
        try {
          this.port.postMessage([env]);
        } catch (err) {
          this.onCloneError(env, err);
        }
      }
    }
  };
}

export interface ThreadHostOptions {
  thread: string;
  askTimeoutMs: number;
  /** Main thread only: serves spawn/stop/cpu requests and root escalations. */
  system?: SystemServices;
}

/** What only the main thread can do; workers reach it with `sys` envelopes. */
export interface SystemServices {
  handle(req: SysRequest, from: string): Promise<unknown>;
  rootFailure(failure: ChildFailure): void;
  directoryChanged(name: string, thread: string | null): void;
}

/**
 * The runtime on one thread: the actors pinned here, the directory of where every other
 * actor lives, the links to the other threads, and the asks waiting for replies.
 * The same class runs on the main thread and on every worker; only the main thread has
 * `system` services and the authoritative directory.
 */
export class ThreadHost implements CellHost {
  readonly thread: string;
  readonly registry = new Registry();
  readonly log: Logger;
  private readonly cells = new Map<string, ActorCell>();
  private readonly directory = new Map<string, string>();
  private readonly links = new Map<string, Link>();
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private readonly askTimeoutMs: number;
  private readonly system: SystemServices | undefined;
  private readonly handling: Histogram<'actor' | 'thread'>;
  private readonly handlingChildren = new Map<string, { observe(v: number): void }>();
  private readonly deadLetters: Counter<'thread' | 'actor' | 'reason'>;

  constructor(opts: ThreadHostOptions) {
    this.thread = opts.thread;
    this.askTimeoutMs = opts.askTimeoutMs;
    this.system = opts.system;
    this.log = createLogger(`runtime.${opts.thread}`);
    this.handling = new Histogram({
      name: 'llmgw_actor_handling_seconds',
      help: 'Time an actor spent handling one message',
      labelNames: ['actor', 'thread'],
      buckets: [1e-6, 5e-6, 25e-6, 1e-4, 5e-4, 0.0025, 0.01, 0.05, 0.25, 1, 5],
      registers: [this.registry],
    });
    this.deadLetters = new Counter({
      name: 'llmgw_actor_dead_letters_total',
      help: 'Messages that could not be delivered, by addressee and reason (LLMGW_MAILBOX_FULL, LLMGW_ACTOR_STOPPED, LLMGW_ACTOR_NOT_FOUND, uncloneable)',
      labelNames: ['thread', 'actor', 'reason'],
      registers: [this.registry],
    });
    this.registerCellMetrics();
  }

  // ---- addressing -------------------------------------------------------------------

  ref<M extends Message>(to: Address<M>): ActorRef<M> {
    return new Ref<M>(this, to.name);
  }

  has(name: string): boolean {
    return this.cells.has(name);
  }

  where(name: string): string | undefined {
    return this.cells.has(name) ? this.thread : this.directory.get(name);
  }

  /** False when the message became a dead letter here; see ActorRef.tell. */
  tell(to: string, msg: Message, transfer?: TransferListItem[]): boolean {
    const cell = this.cells.get(to);
    if (cell === undefined) return this.route({ k: 'msg', to, from: this.thread, hops: 0, msg }, transfer);
    const refused = cell.offer(msg, undefined);
    if (refused === undefined) return true;
    this.deadLetter(to, refused.code);
    return false;
  }

  ask(to: string, msg: Message, opts?: AskOptions): Promise<unknown> {
    const id = this.nextId++;
    const timeoutMs = opts?.timeoutMs ?? this.askTimeoutMs;
    const promise = new Promise<unknown>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new LlmgwError('LLMGW_ASK_TIMEOUT', `ask '${msg.type}' to '${to}' got no reply within ${timeoutMs} ms`, { actor: to, timeoutMs }));
      }, timeoutMs);
      this.pending.set(id, { resolve, reject, timer, thread: this.where(to) });
    });
    const cell = this.cells.get(to);
    if (cell !== undefined) {
      const refused = cell.offer(msg, (ok, value) => this.settle(id, ok, value));
      if (refused !== undefined) {
        this.deadLetter(to, refused.code);
        this.settle(id, false, refused.serialize());
      }
    } else {
      this.route({ k: 'msg', to, from: this.thread, hops: 0, msg, ask: id }, opts?.transfer);
    }
    return promise;
  }

  /** A request to the main thread's system services. */
  sys(req: SysRequest, transfer?: TransferListItem[]): Promise<unknown> {
    if (this.system) return this.system.handle(req, this.thread);
    const id = this.nextId++;
    const main = this.links.get(MAIN_THREAD);
    if (!main) return Promise.reject(new LlmgwError('LLMGW_THREAD_DIED', `thread '${this.thread}' has lost its link to the main thread`));
    return new Promise<unknown>((resolve, reject) => {
      // System requests (spawning, CPU tasks) can legitimately take long; the main
      // thread's own timeouts bound them, this one only guards against a lost reply.
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new LlmgwError('LLMGW_ASK_TIMEOUT', `system request '${req.op}' got no reply`));
      }, Math.max(this.askTimeoutMs, 60_000));
      this.pending.set(id, { resolve, reject, timer, thread: MAIN_THREAD });
      main.post({ k: 'sys', id, from: this.thread, req }, transfer);
    });
  }

  private settle(id: number, ok: boolean, value: unknown): void {
    const p = this.pending.get(id);
    if (p === undefined) return; // timed out already
    this.pending.delete(id);
    clearTimeout(p.timer);
    if (ok) p.resolve(value);
    else p.reject(LlmgwError.deserialize(value as SerializedError));
  }

  /** Sends an envelope toward the thread that hosts `env.to`; false when it became a dead letter here. */
  private route(env: Envelope & { k: 'msg' }, transfer?: TransferListItem[]): boolean {
    const target = this.directory.get(env.to);
    const link = target !== undefined ? this.links.get(target) : undefined;
    if (link !== undefined && env.hops < MAX_HOPS) {
      link.post({ ...env, hops: env.hops + 1 }, transfer);
      return true;
    }
    // Workers learn of new actors a moment after the main thread does; the main thread
    // knows everything, so anything unknown here goes there.
    const main = this.links.get(MAIN_THREAD);
    if (main !== undefined && env.hops < MAX_HOPS) {
      main.post({ ...env, hops: env.hops + 1 }, transfer);
      return true;
    }
    this.undeliverable(env, new LlmgwError('LLMGW_ACTOR_NOT_FOUND', `no actor named '${env.to}'`, { actor: env.to }));
    return false;
  }

  private deadLetter(actor: string, reason: string): void {
    this.deadLetters.inc({ thread: this.thread, actor, reason });
  }

  private undeliverable(env: Envelope & { k: 'msg' }, error: LlmgwError): void {
    this.deadLetter(env.to, error.code);
    if (env.ask !== undefined) {
      this.replyTo(env.from, env.ask, false, error.serialize());
    } else if (env.from === this.thread) {
      this.log.warn('message not delivered', { to: env.to, type: env.msg.type, error });
    } else {
      this.post(env.from, { k: 'undelivered', to: env.to, msgType: env.msg.type, error: error.serialize() });
    }
  }

  private replyTo(thread: string, id: number, ok: boolean, value: unknown): void {
    if (thread === this.thread) {
      this.settle(id, ok, value);
      return;
    }
    this.post(
      thread,
      ok ? { k: 'reply', id, ok: true, value } : { k: 'reply', id, ok: false, error: value as SerializedError },
    );
  }

  /** Posts to a thread directly, or through the main thread when there is no direct link. */
  private post(thread: string, env: Envelope): void {
    const link = this.links.get(thread) ?? this.links.get(MAIN_THREAD);
    if (link === undefined) {
      this.log.warn('envelope to a thread with no link dropped', { thread, kind: env.k });
      return;
    }
    if (link.thread !== thread && (env.k === 'reply' || env.k === 'undelivered')) {
      link.post({ k: 'relay', thread, env });
      return;
    }
    link.post(env);
  }

  // ---- receiving --------------------------------------------------------------------

  connect(thread: string, port: MessagePort): void {
    this.links.get(thread)?.port.close();
    const link = new Link(thread, port, (env, err) => this.cloneFailed(env, err));
    port.on('message', (batch: Envelope[]) => {
      for (const env of batch) this.receive(env, link);
    });
    this.links.set(thread, link);
  }

  private cloneFailed(env: Envelope, err: unknown): void {
    const error = new LlmgwError('LLMGW_INVALID_REQUEST', `message could not be sent across threads: ${(err as Error).message}`);
    if (env.k === 'msg') {
      if (env.ask !== undefined && env.from === this.thread) this.settle(env.ask, false, error.serialize());
      else this.deadLetter(env.to, 'uncloneable');
      this.log.error('uncloneable message', { to: env.to, type: env.msg.type, error });
    } else if (env.k === 'reply') {
      this.log.error('uncloneable reply', { error });
    } else {
      this.log.error('uncloneable envelope', { kind: env.k, error });
    }
  }

  receive(env: Envelope, link?: Link): void {
    switch (env.k) {
      case 'msg':
        this.deliver(env);
        return;
      case 'reply':
        this.settle(env.id, env.ok, env.ok ? env.value : env.error);
        return;
      case 'undelivered':
        // Counted where it was refused; here it is only logged for the sender's thread.
        this.log.warn('message not delivered', { to: env.to, type: env.msgType, error: env.error });
        return;
      case 'dir':
        this.setDirectory(env.name, env.thread);
        return;
      case 'child-failed':
        this.childFailed(env.to, env.failure);
        return;
      case 'supervise':
        this.supervise(env.to, env.decision);
        return;
      case 'relay':
        this.post(env.thread, env.env);
        return;
      case 'sys':
        this.serveSys(env.id, env.from, env.req);
        return;
      case 'ping':
        link?.post({ k: 'pong', id: env.id });
        return;
      case 'pong':
        this.settle(env.id, true, undefined);
        return;
    }
  }

  /** Resolves once every envelope this thread has posted so far has been received. */
  barrier(): Promise<void> {
    const waits = [...this.links.values()].map((link) => {
      const id = this.nextId++;
      const done = new Promise<unknown>((resolve, reject) => {
        const timer = setTimeout(() => {
          this.pending.delete(id);
          reject(new LlmgwError('LLMGW_ASK_TIMEOUT', `barrier to thread '${link.thread}' got no answer`));
        }, this.askTimeoutMs);
        this.pending.set(id, { resolve, reject, timer, thread: link.thread });
      });
      link.post({ k: 'ping', id });
      return done;
    });
    return Promise.all(waits).then(() => undefined);
  }

  private deliver(env: Envelope & { k: 'msg' }): void {
    const cell = this.cells.get(env.to);
    if (cell === undefined) {
      this.route(env);
      return;
    }
    const ask = env.ask;
    const reply: Reply | undefined = ask === undefined ? undefined : (ok, value) => this.replyTo(env.from, ask, ok, value);
    const refused = cell.offer(env.msg, reply);
    if (refused !== undefined) this.undeliverable(env, refused);
  }

  private serveSys(id: number, from: string, req: SysRequest): void {
    if (!this.system) {
      this.replyTo(from, id, false, new LlmgwError('LLMGW_INVALID_REQUEST', `thread '${this.thread}' serves no system requests`).serialize());
      return;
    }
    this.system.handle(req, from).then(
      (value) => this.replyTo(from, id, true, value),
      (err: unknown) => this.replyTo(from, id, false, LlmgwError.from(err).serialize()),
    );
  }

  /** Posts an envelope to every linked thread (directory updates from the main thread). */
  broadcast(env: Envelope): void {
    for (const link of this.links.values()) link.post(env);
  }

  /** Directory entries known here, to seed a thread that starts late. */
  directoryEntries(): [string, string][] {
    return [...this.directory];
  }

  setDirectory(name: string, thread: string | null): void {
    if (thread === null) this.directory.delete(name);
    else this.directory.set(name, thread);
    this.system?.directoryChanged(name, thread);
  }

  /** Another thread is gone: its actors are unreachable and asks waiting on them fail now. */
  threadDied(thread: string): void {
    this.links.get(thread)?.port.close();
    this.links.delete(thread);
    for (const [name, t] of this.directory) if (t === thread) this.directory.delete(name);
    for (const [id, p] of this.pending) {
      if (p.thread !== thread) continue;
      this.pending.delete(id);
      clearTimeout(p.timer);
      p.reject(new LlmgwError('LLMGW_THREAD_DIED', `thread '${thread}' died before replying`, { thread }));
    }
  }

  // ---- hosting actors ---------------------------------------------------------------

  async spawnLocal(spec: SpawnSpec): Promise<void> {
    if (this.cells.has(spec.name)) {
      throw new LlmgwError('LLMGW_ACTOR_EXISTS', `an actor named '${spec.name}' already runs on thread '${this.thread}'`);
    }
    const def = (await resolveDef(spec.kind, spec.module)) as ActorDef<Message, unknown, unknown>;
    const cell = new ActorCell(def, spec, this, this.context(spec.name, spec.kind));
    this.cells.set(spec.name, cell);
    this.handlingChildren.set(spec.name, this.handling.labels({ actor: spec.name, thread: this.thread }));
    cell.start();
  }

  stopLocal(name: string): Promise<void> {
    const cell = this.cells.get(name);
    return cell ? cell.stop() : Promise.resolve();
  }

  localNames(): string[] {
    return [...this.cells.keys()];
  }

  private context(name: string, kind: string): ActorContext<Message> {
    const host = this;
    const cell = (): ActorCell => {
      const c = host.cells.get(name);
      if (!c) throw new LlmgwError('LLMGW_ACTOR_STOPPED', `actor '${name}' is no longer running`);
      return c;
    };
    const cpu: CpuRunner = {
      run: <R>(task: string, data: unknown, transfer?: TransferListItem[]) => host.sys({ op: 'cpu', task, data }, transfer) as Promise<R>,
    };
    return {
      name,
      thread: this.thread,
      self: this.ref(address(name)),
      log: createLogger(`actor.${kind}`),
      cpu,
      metrics: this.registry,
      ref: <N extends Message>(to: Address<N>) => host.ref(to),
      spawn: async <N extends Message, A>(def: ActorDef<N, any, A>, opts: SpawnOptions<N, A>) => {
        await host.sys({ op: 'spawn', spec: specFor(def, opts, name, host.thread) });
        return host.ref(opts.address);
      },
      schedule: (key, ms, msg, repeat = false) => cell().scheduleTimer(key, ms, msg as Message, repeat),
      cancel: (key) => cell().cancelTimer(key),
    };
  }

  // ---- CellHost ---------------------------------------------------------------------

  observeHandling(cell: ActorCell, seconds: number): void {
    this.handlingChildren.get(cell.name)?.observe(seconds);
  }

  onFailure(cell: ActorCell, error: LlmgwError, msgType: string | undefined): void {
    this.log.error('actor failed', { actor: cell.name, kind: cell.kind, message: msgType, error, failures: cell.failures });
  }

  escalate(cell: ActorCell, error: LlmgwError): void {
    const failure: ChildFailure = {
      child: cell.name,
      kind: cell.kind,
      thread: this.thread,
      restarts: cell.restarts,
      error: { code: error.code, message: error.message },
    };
    this.log.error('actor escalated after repeated failures', { actor: cell.name, parent: cell.parent ?? ROOT, restarts: cell.restarts });
    this.childFailed(cell.parent ?? ROOT, failure);
  }

  private childFailed(to: string, failure: ChildFailure): void {
    const parent = this.cells.get(to);
    if (parent !== undefined) {
      parent.enqueueFailure(failure);
    } else if (to === ROOT && this.system) {
      this.system.rootFailure(failure);
    } else {
      const thread = to === ROOT ? MAIN_THREAD : this.directory.get(to) ?? MAIN_THREAD;
      this.post(thread, { k: 'child-failed', to, failure });
    }
  }

  supervise(child: string, decision: SupervisorDecision): void {
    const cell = this.cells.get(child);
    if (cell !== undefined) cell.applyDecision(decision);
    else this.post(this.directory.get(child) ?? MAIN_THREAD, { k: 'supervise', to: child, decision });
  }

  removed(cell: ActorCell): void {
    if (this.cells.get(cell.name) !== cell) return;
    this.cells.delete(cell.name);
    this.handlingChildren.delete(cell.name);
    this.handling.remove({ actor: cell.name, thread: this.thread });
    if (this.system) this.setDirectory(cell.name, null);
    else this.links.get(MAIN_THREAD)?.post({ k: 'dir', name: cell.name, thread: null });
  }

  // ---- stats ------------------------------------------------------------------------

  async stats(): Promise<ActorStats[]> {
    const hist = await this.handling.get();
    const buckets = new Map<string, { le: number; count: number }[]>();
    for (const v of hist.values) {
      if (v.metricName !== 'llmgw_actor_handling_seconds_bucket') continue;
      const actor = String(v.labels.actor);
      const labels = v.labels as Record<string, string | number>;
      const le = labels.le === '+Inf' ? Infinity : Number(labels.le);
      let list = buckets.get(actor);
      if (!list) buckets.set(actor, (list = []));
      list.push({ le, count: v.value });
    }
    return [...this.cells.values()].map((c) => {
      const details = c.describe();
      return {
        name: c.name,
        kind: c.kind,
        thread: this.thread,
        parent: c.parent,
        status: c.status,
        mailbox: c.mailbox.size,
        capacity: c.mailbox.capacity,
        highWater: c.mailbox.highWater,
        overflow: c.mailbox.overflow,
        processed: c.processed,
        failures: c.failures,
        restarts: c.restarts,
        dropped: c.mailbox.dropped,
        rejected: c.refused,
        handlingP50Ms: quantileMs(buckets.get(c.name), 0.5),
        handlingP99Ms: quantileMs(buckets.get(c.name), 0.99),
        ...(details === undefined ? {} : { details }),
      };
    });
  }

  private registerCellMetrics(): void {
    const host = this;
    const labelNames = ['actor', 'thread'] as const;
    // Values live on the cells (a plain increment per message) and are copied into the
    // metric at scrape time, so the hot path never touches prom-client.
    const metric = (Kind: typeof Counter | typeof Gauge, name: string, help: string, read: (c: ActorCell) => number): void => {
      new Kind({
        name,
        help,
        labelNames,
        registers: [this.registry],
        collect(this: Counter<'actor' | 'thread'> | Gauge<'actor' | 'thread'>) {
          this.reset();
          for (const c of host.cells.values()) {
            const labels = { actor: c.name, thread: host.thread };
            if (this instanceof Gauge) this.set(labels, read(c));
            else this.inc(labels, read(c));
          }
        },
      });
    };
    const counter = (name: string, help: string, read: (c: ActorCell) => number): void => metric(Counter, name, help, read);
    const gauge = (name: string, help: string, read: (c: ActorCell) => number): void => metric(Gauge, name, help, read);
    counter('llmgw_actor_messages_processed_total', 'Messages an actor has handled', (c) => c.processed);
    counter('llmgw_actor_failures_total', 'Handler failures (each one restarts the actor)', (c) => c.failures);
    counter('llmgw_actor_restarts_total', 'Times an actor was restarted with fresh state', (c) => c.restarts);
    counter('llmgw_actor_messages_dropped_total', 'Messages dropped by a drop-oldest mailbox', (c) => c.mailbox.dropped);
    counter('llmgw_actor_messages_rejected_total', 'Messages an actor refused: full reject mailbox, stopping, a type it does not accept', (c) => c.refused);
    gauge('llmgw_actor_mailbox_depth', 'Messages waiting in an actor mailbox', (c) => c.mailbox.size);
    gauge('llmgw_actor_mailbox_high_water', 'Most messages ever waiting in an actor mailbox at once', (c) => c.mailbox.highWater);
    gauge('llmgw_actor_mailbox_capacity', 'Capacity of an actor mailbox', (c) => c.mailbox.capacity);
  }
}

class Ref<M extends Message> implements ActorRef<M> {
  readonly address: Address<M>;

  constructor(
    private readonly host: ThreadHost,
    readonly name: string,
  ) {
    this.address = address(name);
  }

  tell(msg: Parameters<ActorRef<M>['tell']>[0], transfer?: TransferListItem[]): boolean {
    return this.host.tell(this.name, msg as Message, transfer);
  }

  ask(msg: Message, opts?: AskOptions): Promise<never> {
    return this.host.ask(this.name, msg, opts) as Promise<never>;
  }
}

export function specFor<M extends Message, A>(def: ActorDef<M, any, A>, opts: SpawnOptions<M, A>, parent: string | null, defaultThread: string): SpawnSpec {
  return {
    name: opts.address.name,
    kind: def.kind,
    module: def.module,
    thread: opts.thread ?? defaultThread,
    args: opts.args,
    parent,
    dependsOn: (opts.dependsOn ?? []).map((a) => a.name),
    restarts: 0,
  };
}

/** Upper bound of the bucket holding quantile `q`, in ms; undefined before any sample. */
function quantileMs(buckets: { le: number; count: number }[] | undefined, q: number): number | undefined {
  if (!buckets || buckets.length === 0) return undefined;
  buckets.sort((a, b) => a.le - b.le);
  const total = buckets[buckets.length - 1]!.count;
  if (total === 0) return undefined;
  const rank = q * total;
  for (const b of buckets) if (b.count >= rank) return Number.isFinite(b.le) ? b.le * 1000 : Infinity;
  return undefined;
}
