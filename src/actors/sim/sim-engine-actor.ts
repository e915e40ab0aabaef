import type { SimEngineMsg } from '../../messages/sim.js';
import { defineActor } from '../../runtime/actor.js';
import { startSimEngine, type SimEngineOptions } from '../../sim/index.js';

/**
 * A simulated engine running inside the server process, on its own worker thread so
 * the engine's token loop never competes with the data port's event loop. It serves
 * on an ephemeral loopback port; `address` tells the router where.
 */
export const simEngineActor = defineActor<SimEngineMsg>()({
  kind: 'sim-engine',
  module: import.meta.url,
  mailbox: { capacity: 64, overflow: 'reject' },
  init: async (args: Omit<SimEngineOptions, 'host' | 'port'>) => ({ sim: await startSimEngine({ ...args, host: '127.0.0.1', port: 0 }) }),
  handlers: {
    address: (s) => s.sim.url,
  },
  // A crashed incarnation closes its server too, or its port and token loop would leak.
  onStop: (s) => s.sim.close(),
});
