import { LlmgwError } from '../errors.js';
import type { ActorContext, ActorDef, StopReason } from './actor.js';
import { Mailbox } from './mailbox.js';
import type { Message } from './protocol.js';
import type { SpawnSpec } from './envelope.js';
import { RestartTracker, defaultSupervision, type ChildFailure, type SupervisorDecision } from './supervision.js';

/** Replies to the sender of an ask, wherever it lives. */
export type Reply = (ok: boolean, value: unknown) => void;

/** A queued item: a message (with its reply path for asks) or a child's failure report. */
type Item = { msg: Message; reply: Reply | undefined } | { failure: ChildFailure; reply: undefined; msg?: undefined };

export type CellStatus = 'starting' | 'running' | 'restarting' | 'failed' | 'stopping' | 'stopped';

/** What the hosting thread provides to a cell. */
export interface CellHost {
  readonly thread: string;
  observeHandling(cell: ActorCell, seconds: number): void;
  /** A child has used up its restarts: tell its parent (or the system, for a root actor). */
  escalate(cell: ActorCell, error: LlmgwError): void;
  /** The cell has stopped for good and leaves the thread. */
  removed(cell: ActorCell): void;
  onFailure(cell: ActorCell, error: LlmgwError, msgType: string | undefined): void;
  /** Delivers a parent's decision to a child, wherever the child lives. */
  supervise(child: string, decision: SupervisorDecision): void;
}

// Messages are handled in batches; after this many the cell yields to the event loop so
// one busy actor cannot starve sockets and timers on its thread.
const BATCH = 256;

/**
 * A drop-oldest mailbox sheds tells before asks: a tell's sender has moved on, an ask's
 * waits for the answer (the server's first probe of an engine, crowded out by the
 * poller's own ticks while a probe was slow, once failed the server's start).
 */
const isAsk = (item: Item): boolean => item.reply !== undefined;

/**
 * Runs one actor: its mailbox, one message at a time, its state, timers, restarts and
 * counters. Handlers may be sync or async; an async handler holds the mailbox until it
 * settles, so state is never touched by two messages at once.
 */
export class ActorCell {
  readonly name: string;
  readonly kind: string;
  readonly parent: string | null;
  readonly mailbox: Mailbox<Item>;
  status: CellStatus = 'starting';
  processed = 0;
  failures = 0;
  /** Messages refused at the door: full reject mailbox, stopping, a type it does not accept. */
  refused = 0;
  restarts: number;
  private state: unknown;
  private accepting = true;
  private scheduled = false;
  private busy = false;
  private readonly tracker: RestartTracker;
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private stopWaiters: (() => void)[] = [];
  private restartTimer: NodeJS.Timeout | undefined;
  private stopping = false;
  /** The onStop of the last state thrown away, while it runs. */
  private releasing: Promise<void> = Promise.resolve();
  private readonly childFailures: Item[] = [];

  constructor(
    private readonly def: ActorDef<Message, unknown, unknown>,
    private readonly spec: SpawnSpec,
    private readonly host: CellHost,
    readonly ctx: ActorContext<Message>,
  ) {
    this.name = spec.name;
    this.kind = def.kind;
    this.parent = spec.parent;
    this.restarts = spec.restarts;
    this.mailbox = new Mailbox<Item>(def.mailbox);
    this.tracker = new RestartTracker({ ...defaultSupervision, ...def.supervision });
  }

  /** The definition's one-line summary of the current state, if it has the hook and a state. */
  describe(): string | undefined {
    if (this.state === undefined || !this.def.describe) return undefined;
    try {
      return this.def.describe(this.state);
    } catch (err) {
      return `describe failed: ${(err as Error).message}`;
    }
  }

  get dependsOn(): readonly string[] {
    return this.spec.dependsOn;
  }

  get spawnSpec(): SpawnSpec {
    return { ...this.spec, restarts: this.restarts };
  }

  start(): void {
    this.status = 'starting';
    let init: unknown;
    try {
      init = this.def.init(this.spec.args, this.ctx);
    } catch (err) {
      this.crash(err, undefined);
      return;
    }
    if (isPromise(init)) {
      init.then(
        (s) => this.started(s),
        (err: unknown) => this.crash(err, undefined),
      );
    } else {
      this.started(init);
    }
  }

  private started(state: unknown): void {
    if (this.status !== 'starting') return; // stopped while init was pending
    this.state = state;
    this.status = this.accepting ? 'running' : 'stopping';
    this.schedule();
  }

  /**
   * Queues a message, or says why not: the actor is stopping, does not accept the type,
   * or its reject mailbox is full. Never throws, so a tell on any path cannot blow up
   * its sender; the refusal is counted (`refused`) and the caller turns it into a dead
   * letter or a failed ask.
   */
  offer(msg: Message, reply: Reply | undefined): LlmgwError | undefined {
    if (!this.accepting) {
      this.refused++;
      return new LlmgwError('LLMGW_ACTOR_STOPPED', `actor '${this.name}' is stopping and accepts no messages`, { actor: this.name });
    }
    if (!Object.hasOwn(this.def.handlers, msg.type)) {
      // Only reachable from untyped callers (an address declared with the wrong protocol).
      this.refused++;
      return new LlmgwError('LLMGW_INVALID_REQUEST', `actor '${this.name}' (${this.kind}) does not accept '${msg.type}'`, { actor: this.name });
    }
    if (!this.mailbox.push({ msg, reply }, this.evicted, isAsk)) {
      this.refused++;
      return new LlmgwError('LLMGW_MAILBOX_FULL', `mailbox of '${this.name}' is full (${this.mailbox.capacity} messages); the message was rejected`, {
        actor: this.name,
        capacity: this.mailbox.capacity,
      });
    }
    this.schedule();
    return undefined;
  }

  private readonly evicted = (item: Item): void => {
    item.reply?.(false, new LlmgwError('LLMGW_MAILBOX_FULL', `message to '${this.name}' was dropped to make room (drop-oldest)`).serialize());
  };

  /**
   * A child's failure report. It jumps the queue and bypasses the mailbox's capacity: a
   * full mailbox must not swallow a failure (one report per child, so this stays small).
   */
  enqueueFailure(failure: ChildFailure): void {
    this.childFailures.push({ failure, reply: undefined });
    this.schedule();
  }

  private schedule(): void {
    if (this.scheduled || this.busy) return;
    if (this.status !== 'running' && this.status !== 'stopping') return;
    this.scheduled = true;
    queueMicrotask(this.run);
  }

  private readonly run = (): void => {
    this.scheduled = false;
    for (let n = 0; n < BATCH; n++) {
      if (this.busy || (this.status !== 'running' && this.status !== 'stopping')) return;
      const item = this.childFailures.shift() ?? this.mailbox.shift();
      if (item === undefined) {
        if (this.status === 'stopping') void this.finishStop();
        return;
      }
      this.handle(item);
    }
    // Yield to I/O, then go on.
    this.scheduled = true;
    setImmediate(this.run);
  };

  private handle(item: Item): void {
    const t0 = performance.now();
    let result: unknown;
    try {
      result = item.msg === undefined ? this.superviseChild(item.failure) : this.dispatch(item.msg);
    } catch (err) {
      this.crash(err, item);
      return;
    }
    if (isPromise(result)) {
      this.busy = true;
      result.then(
        (value) => {
          this.busy = false;
          this.done(item, value, t0);
          this.schedule();
        },
        (err: unknown) => {
          this.busy = false;
          this.crash(err, item);
        },
      );
      return;
    }
    this.done(item, result, t0);
  }

  private dispatch(msg: Message): unknown {
    const handler = (this.def.handlers as Record<string, (s: unknown, m: Message, c: ActorContext<Message>) => unknown>)[msg.type]!;
    return handler(this.state, msg, this.ctx);
  }

  private superviseChild(failure: ChildFailure): SupervisorDecision {
    const decision = this.def.onChildFailure?.(this.state, failure, this.ctx) ?? 'escalate';
    if (decision === 'escalate') {
      this.host.supervise(failure.child, 'stop');
      throw new LlmgwError('LLMGW_ESCALATED', `child '${failure.child}' failed ${failure.restarts + 1} times: ${failure.error.message}`, { child: failure.child });
    }
    this.host.supervise(failure.child, decision);
    return decision;
  }

  private done(item: Item, value: unknown, t0: number): void {
    this.processed++;
    this.host.observeHandling(this, (performance.now() - t0) / 1000);
    item.reply?.(true, value);
  }

  private crash(err: unknown, item: Item | undefined): void {
    const error = LlmgwError.from(err);
    this.failures++;
    item?.reply?.(false, error.serialize());
    this.host.onFailure(this, error, item?.msg?.type);
    this.clearTimers();
    const state = this.state;
    this.state = undefined;
    this.releasing = this.release(state, 'crashed');
    if (!this.accepting) {
      // A failure while stopping ends the actor; the stop still completes.
      void this.finishStop();
      return;
    }
    const backoff = this.tracker.onFailure(Date.now());
    if (backoff === null) {
      this.status = 'failed';
      this.host.escalate(this, error);
      return;
    }
    this.status = 'restarting';
    const released = this.releasing;
    this.restartTimer = setTimeout(() => {
      // The next incarnation starts only once the last one has let go of its resources
      // (a port it listened on, the engines it watched).
      void released.then(() => {
        if (this.status !== 'restarting' || !this.accepting) return; // stopped meanwhile
        this.restartTimer = undefined;
        this.restarts++;
        this.start();
      });
    }, backoff);
  }

  /** Runs the definition's onStop for a state being thrown away; its failure is only logged. */
  private async release(state: unknown, reason: StopReason): Promise<void> {
    await this.releasing;
    if (state === undefined || !this.def.onStop) return;
    try {
      await this.def.onStop(state, reason, this.ctx);
    } catch (err) {
      this.failures++;
      this.host.onFailure(this, LlmgwError.from(err), 'onStop');
    }
  }

  /** The parent's decision after an escalation. */
  applyDecision(decision: SupervisorDecision): void {
    if (this.status !== 'failed') return;
    if (decision === 'restart') {
      this.tracker.reset();
      this.restarts++;
      this.status = 'restarting';
      void this.releasing.then(() => {
        if (this.status === 'restarting' && this.accepting) this.start();
      });
    } else {
      void this.stop();
    }
  }

  /** Stops accepting, drains what is queued, runs the stop hook, leaves. */
  stop(): Promise<void> {
    if (this.status === 'stopped') return Promise.resolve();
    const done = new Promise<void>((resolve) => this.stopWaiters.push(resolve));
    if (this.accepting) {
      this.accepting = false;
      if (this.status === 'running') this.status = 'stopping';
      if (this.status === 'restarting' || this.status === 'failed') {
        clearTimeout(this.restartTimer);
        void this.finishStop();
      } else {
        this.schedule();
      }
    }
    return done;
  }

  private async finishStop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.clearTimers();
    const gone = new LlmgwError('LLMGW_ACTOR_STOPPED', `actor '${this.name}' stopped before handling the message`).serialize();
    this.mailbox.drainTo((item) => item.reply?.(false, gone));
    const state = this.state;
    if (state !== undefined && this.def.stop) {
      try {
        await this.def.stop(state, this.ctx);
      } catch (err) {
        this.failures++;
        this.host.onFailure(this, LlmgwError.from(err), 'stop');
      }
    }
    this.state = undefined;
    this.releasing = this.release(state, 'stopped');
    await this.releasing;
    this.status = 'stopped';
    this.host.removed(this);
    for (const w of this.stopWaiters.splice(0)) w();
  }

  scheduleTimer(key: string, ms: number, msg: Message, repeat: boolean): void {
    this.cancelTimer(key);
    // A full mailbox skips this tick (counted as refused); the next one comes.
    const fire = (): void => void this.offer(msg, undefined);
    const t = repeat ? setInterval(fire, ms) : setTimeout(() => (this.timers.delete(key), fire()), ms);
    t.unref();
    this.timers.set(key, t);
  }

  cancelTimer(key: string): void {
    const t = this.timers.get(key);
    if (t !== undefined) {
      clearTimeout(t);
      this.timers.delete(key);
    }
  }

  private clearTimers(): void {
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
  }
}

function isPromise(v: unknown): v is Promise<unknown> {
  return typeof v === 'object' && v !== null && typeof (v as Promise<unknown>).then === 'function';
}
