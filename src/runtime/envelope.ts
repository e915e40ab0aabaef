import type { SerializedError } from '../errors.js';
import type { Message } from './protocol.js';
import type { SupervisorDecision, ChildFailure } from './supervision.js';

// What travels between threads. Envelopes are batched per destination port and posted
// as one array per microtask turn: postMessage costs microseconds, a batch costs one.

export interface SpawnSpec {
  name: string;
  kind: string;
  /** URL of the module that defines the actor; a worker imports it to find the definition. */
  module: string;
  thread: string;
  args: unknown;
  parent: string | null;
  dependsOn: string[];
  /** Restarts carried over when an actor is respawned on a new thread. */
  restarts: number;
}

export type SysRequest =
  | { op: 'spawn'; spec: SpawnSpec }
  | { op: 'stop'; name: string }
  | { op: 'cpu'; task: string; data: unknown };

export type Envelope =
  /** A message for actor `to`; `ask` is the sender's request id when it awaits a reply. */
  | { k: 'msg'; to: string; from: string; hops: number; msg: Message; ask?: number }
  | { k: 'reply'; id: number; ok: true; value: unknown }
  | { k: 'reply'; id: number; ok: false; error: SerializedError }
  /** A tell the receiving thread could not deliver (unknown actor, full mailbox, stopped). */
  | { k: 'undelivered'; to: string; msgType: string; error: SerializedError }
  /** Directory update from the main thread: `thread` null when the actor is gone. */
  | { k: 'dir'; name: string; thread: string | null }
  /** A child used up its restarts; its parent must decide. */
  | { k: 'child-failed'; to: string; failure: ChildFailure }
  /** The parent's decision, back to the failed child. */
  | { k: 'supervise'; to: string; decision: SupervisorDecision }
  /** For a thread with no direct link to `thread` (a worker that just started): pass it on. */
  | { k: 'relay'; thread: string; env: Envelope }
  /**
   * Barrier: ports are FIFO, so a pong proves every envelope posted before the ping has
   * been received. Shutdown uses it between waves so nothing in flight is lost.
   */
  | { k: 'ping'; id: number }
  | { k: 'pong'; id: number }
  /** A request to the main thread's system services (spawn, stop, the CPU pool). */
  | { k: 'sys'; id: number; from: string; req: SysRequest };
