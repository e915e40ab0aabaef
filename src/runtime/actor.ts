import type { TransferListItem } from 'node:worker_threads';
import type { Registry } from 'prom-client';
import type { Logger } from '../log.js';
import type { MailboxOptions } from './mailbox.js';
import type { Address, AskOf, Message, MessageOf, ReplyOf, TellOf } from './protocol.js';
import type { ChildFailure, SupervisionPolicy, SupervisorDecision } from './supervision.js';

/** Why an actor's state ends: an orderly stop, or a crash before a restart or escalation. */
export type StopReason = 'stopped' | 'crashed';

/** Options for one `ask`. */
export interface AskOptions {
  /** Milliseconds before the ask fails with LLMGW_ASK_TIMEOUT (default: the system's). */
  timeoutMs?: number;
  /** Buffers to move (not copy) to the receiving thread; the sender loses them. */
  transfer?: TransferListItem[];
}

/**
 * A location-transparent address. The same calls work whether the actor lives on this
 * thread or another; only the cost differs (see `npm run bench`).
 */
export interface ActorRef<M extends Message> {
  readonly name: string;
  readonly address: Address<M>;
  /**
   * Fire and forget; never throws. False when the message was refused here and became a
   * dead letter (a full or stopping local mailbox, no such actor): a sender on a command
   * path can react. True when it was queued, or handed to the thread that hosts the
   * actor; a refusal there is counted as a dead letter on that thread.
   */
  tell(msg: TellOf<M>, transfer?: TransferListItem[]): boolean;
  /** Request/reply with a timeout; rejects with the handler's error as an LlmgwError. */
  ask<T extends AskOf<M>['type']>(msg: { type: T } & MessageOf<M, T>, opts?: AskOptions): Promise<ReplyOf<M, T>>;
}

export interface SpawnOptions<M extends Message, A> {
  /** The actor's address, of the definition's protocol (declared in src/messages). */
  address: Address<M>;
  /** `main` or the name of a worker thread declared when the system started. */
  thread?: string;
  args: A;
  /**
   * Actors this one sends to while it drains. Shutdown stops dependents first, so an
   * actor flushing on stop still finds the actors it depends on alive.
   */
  dependsOn?: readonly Address<any>[];
}

/** CPU work run on the piscina pool; usable from an actor on any thread. */
export interface CpuRunner {
  run<R>(task: string, data: unknown, transfer?: TransferListItem[]): Promise<R>;
}

export interface ActorContext<M extends Message> {
  readonly name: string;
  readonly thread: string;
  readonly self: ActorRef<M>;
  readonly log: Logger;
  readonly cpu: CpuRunner;
  /**
   * The thread's Prometheus registry, merged into the admin port's /metrics. Metrics
   * outlive a restart of the actor: look one up with `getSingleMetric` before creating it.
   */
  readonly metrics: Registry;
  /** A ref to the actor at `address`, of the address's protocol. */
  ref<N extends Message>(address: Address<N>): ActorRef<N>;
  /** Spawns a child supervised by this actor. */
  spawn<N extends Message, A>(def: ActorDef<N, any, A>, opts: SpawnOptions<N, A>): Promise<ActorRef<N>>;
  /** Sends `msg` to this actor after `ms` (every `ms` when `repeat`). Replaces a timer with the same key; cleared on restart and stop. */
  schedule(key: string, ms: number, msg: TellOf<M>, repeat?: boolean): void;
  cancel(key: string): void;
}

/** One handler per message type: exhaustive by construction, replies typed per message. */
export type Handlers<M extends Message, S> = {
  [T in M['type']]: (state: S, msg: MessageOf<M, T>, ctx: ActorContext<M>) => ReplyOf<M, T> | Promise<ReplyOf<M, T>>;
};

export interface ActorDef<M extends Message, S, A> {
  /** Unique across the program: how a worker thread finds this definition. */
  readonly kind: string;
  /** `import.meta.url` of the defining module, imported by worker threads. */
  readonly module: string;
  readonly mailbox: MailboxOptions;
  readonly supervision?: Partial<SupervisionPolicy>;
  /** Builds fresh state: at start and after every restart. */
  init(args: A, ctx: ActorContext<M>): S | Promise<S>;
  readonly handlers: Handlers<M, S>;
  /** Runs once on orderly stop, after the mailbox has drained: flush buffers here. */
  stop?(state: S, ctx: ActorContext<M>): void | Promise<void>;
  /**
   * Releases what the state holds (sockets, servers, pools, child-process handles): after
   * `stop` on an orderly stop, and when a crash throws the state away, before the restart
   * builds a new one, so one incarnation's resources never outlive it. Not called when
   * init fails (there is no state): init cleans up after itself.
   */
  onStop?(state: S, reason: StopReason, ctx: ActorContext<M>): void | Promise<void>;
  /** A child used up its restarts. Without this hook the failure escalates further. */
  onChildFailure?(state: S, failure: ChildFailure, ctx: ActorContext<M>): SupervisorDecision;
  /** One short line of what the actor holds (queue depths…), shown by `llmgw ctl actors`. */
  describe?(state: S): string;
}

/** Protocol of a definition, for typing refs from a def. */
export type ProtocolOf<D> = D extends ActorDef<infer M, any, any> ? M : never;

const registry = new Map<string, ActorDef<any, any, any>>();

/**
 * Declares an actor kind for protocol `M`. Curried so that `M` is stated and the state
 * and argument types are inferred:
 *
 *   export const counter = defineActor<CounterMsg>()({ kind: 'counter', module: import.meta.url, ... })
 */
export function defineActor<M extends Message>() {
  return <S, A>(def: ActorDef<M, S, A>): ActorDef<M, S, A> => {
    const existing = registry.get(def.kind);
    if (existing && existing.module !== def.module) {
      throw new Error(`actor kind '${def.kind}' is defined twice: ${existing.module} and ${def.module}`);
    }
    registry.set(def.kind, def);
    return Object.freeze(def);
  };
}

/** Finds a definition by kind, importing its module first (worker threads start empty). */
export async function resolveDef(kind: string, module: string): Promise<ActorDef<any, any, any>> {
  let def = registry.get(kind);
  if (!def) {
    await import(module);
    def = registry.get(kind);
  }
  if (!def) throw new Error(`module ${module} does not define actor kind '${kind}'`);
  return def;
}
