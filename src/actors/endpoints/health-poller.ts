import { Pool } from 'undici';
import type { EndpointProbe, EndpointRegistryMsg, EngineSettings, HealthPollerMsg } from '../../messages/endpoints.js';
import type { Address } from '../../runtime/index.js';
import { probeEndpoint, scrapeEndpointLoad } from '../../router/scrape/endpoint-probe.js';
import { defineActor } from '../../runtime/actor.js';

export interface HealthPollerArgs {
  id: string;
  url: string;
  /** The served names this endpoint must list in /v1/models to count as ready. */
  models: string[];
  intervalMs: number;
  timeoutMs: number;
  registry: Address<EndpointRegistryMsg>;
}

/** Polls one endpoint (see router/scrape/endpoint-probe.ts) and reports to the registry. */
export const healthPoller = defineActor<HealthPollerMsg>()({
  kind: 'health-poller',
  module: import.meta.url,
  // Polls are idempotent ticks: when the actor falls behind, the newest tick is the one worth keeping.
  mailbox: { capacity: 4, overflow: 'drop-oldest' },
  init: (args: HealthPollerArgs, ctx): State => {
    ctx.schedule('poll', args.intervalMs, { type: 'poll' }, true);
    ctx.self.tell({ type: 'poll' });
    // Its own pool: the probes keep one warm connection to the engine instead of sharing
    // the global dispatcher, and a stopped or crashed poller closes what it opened.
    return { ...args, pool: new Pool(args.url, { connections: 2 }) };
  },
  handlers: {
    poll: async (s, _m, ctx) => {
      ctx.ref(s.registry).tell({ type: 'probe', probe: await probe(s) });
    },
    'poll-now': async (s, _m, ctx) => {
      const p = await probe(s);
      ctx.ref(s.registry).tell({ type: 'probe', probe: p });
      return p;
    },
    scrape: async (s, _m, ctx) => {
      ctx.ref(s.registry).tell({ type: 'load', id: s.id, ...(await scrapeEndpointLoad(s, s.pool)) });
    },
  },
  onStop: (s) => s.pool.destroy(),
});

interface State extends HealthPollerArgs {
  pool: Pool;
  /**
   * The engine's published settings, read once per stretch of readiness: an engine that
   * went down may come back restarted with others. Undefined: not read since.
   */
  settings?: EngineSettings | null | undefined;
}

async function probe(s: State): Promise<EndpointProbe> {
  const p = await probeEndpoint(s, s.pool, s.settings);
  s.settings = p.ready ? p.settings : undefined;
  return p;
}
