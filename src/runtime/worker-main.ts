import { parentPort, workerData } from 'node:worker_threads';
import { expose } from 'comlink';
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs';
import { MAIN_THREAD, ThreadHost } from './thread-host.js';
import type { ThreadControl, WorkerBoot } from './thread-control.js';

// Entry point of every worker thread: a ThreadHost linked to the main thread, and the
// control surface the main thread drives over comlink.

const boot = workerData as WorkerBoot;
const host = new ThreadHost({ thread: boot.thread, askTimeoutMs: boot.askTimeoutMs });
host.connect(MAIN_THREAD, boot.port);

const control: ThreadControl = {
  spawn: (spec) => host.spawnLocal(spec),
  stop: (name) => host.stopLocal(name),
  stats: () => host.stats(),
  metrics: () => host.registry.getMetricsAsJSON(),
  connect: (thread, port) => host.connect(thread, port),
  seedDirectory: (entries) => {
    for (const [name, thread] of entries) host.setDirectory(name, thread);
  },
  threadDied: (thread) => host.threadDied(thread),
  barrier: () => host.barrier(),
};

if (!parentPort) throw new Error('worker-main must run in a worker thread');
expose(control, nodeEndpoint(parentPort));
