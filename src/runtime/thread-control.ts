import type { MessagePort } from 'node:worker_threads';
import type { MetricObjectWithValues, MetricValue } from 'prom-client';
import type { SpawnSpec } from './envelope.js';
import type { ActorStats } from './stats.js';

/**
 * What the main thread may call on a worker thread, through comlink. Every call is
 * wrapped by the system with a timeout and fails at once when the worker dies — the
 * two things comlink itself does not do.
 */
export interface ThreadControl {
  spawn(spec: SpawnSpec): Promise<void>;
  stop(name: string): Promise<void>;
  stats(): Promise<ActorStats[]>;
  metrics(): Promise<MetricObjectWithValues<MetricValue<string>>[]>;
  /** A direct link to another worker (the thread mesh). */
  connect(thread: string, port: MessagePort): void;
  /** Seeds the directory of a worker that starts after actors exist. */
  seedDirectory(entries: [string, string][]): void;
  threadDied(thread: string): void;
  /** Resolves once everything this thread has posted has reached the other threads. */
  barrier(): Promise<void>;
}

export interface WorkerBoot {
  thread: string;
  askTimeoutMs: number;
  /** Envelope link to the main thread (control calls use the worker's own port). */
  port: MessagePort;
}
