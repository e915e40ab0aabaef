// Actor kinds used by the runtime benchmarks. They live in their own module because a
// worker thread imports the module that defines an actor: the bench entry must not run
// again inside every worker.
import { defineActor, type Address, type Ask } from '../src/runtime/index.js';

/** Counts what it is told; answers pings at once. The cheapest possible actor. */
export type SinkMsg =
  | { type: 'hit'; n: number }
  | ({ type: 'count' } & Ask<number>)
  | ({ type: 'ping' } & Ask<number>);

export const sink = defineActor<SinkMsg>()({
  kind: 'bench.sink',
  module: import.meta.url,
  // One throughput iteration queues 10,000 tells and one ask before the actor runs.
  mailbox: { capacity: 16_384, overflow: 'reject' },
  init: () => ({ count: 0 }),
  handlers: {
    hit: (s) => {
      s.count++;
    },
    count: (s) => s.count,
    ping: () => 0,
  },
});

/**
 * Asks `target` once and replies with how long that ask took, timed on the prober's own
 * thread (ms, `performance.now()`): an actor-to-actor round trip without the caller's
 * hop to the prober in it.
 */
export type ProberMsg = { type: 'probe'; target: Address<SinkMsg> } & Ask<number>;

export const prober = defineActor<ProberMsg>()({
  kind: 'bench.prober',
  module: import.meta.url,
  mailbox: { capacity: 16, overflow: 'reject' },
  init: () => ({}),
  handlers: {
    probe: async (_s, m, ctx) => {
      const target = ctx.ref(m.target);
      const t0 = performance.now();
      await target.ask({ type: 'ping' });
      return performance.now() - t0;
    },
  },
});
