import { Pool } from 'undici';
import type { EndpointProbe, EndpointRegistryMsg, HealthPollerMsg } from '../../messages/endpoints.js';
import type { Address } from '../../runtime/index.js';
import { parseEngineLoad } from '../../router/scrape/engine-load.js';
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

/**
 * Polls one endpoint and reports to the registry: readiness and the engine's load.
 * Ready means what it means for vLLM: `/health` answers 200 and `/v1/models` lists the
 * served name — a process that is up but still loading weights refuses connections,
 * and one that lists another model is misconfigured, so neither may receive traffic.
 * Load comes from `/metrics` (vLLM or SGLang names); a failed scrape leaves the
 * endpoint routable, since the router's own in-flight counts still stand in for it.
 */
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
  },
  onStop: (s) => s.pool.destroy(),
});

interface State extends HealthPollerArgs {
  pool: Pool;
}

async function probe(s: State): Promise<EndpointProbe> {
  const at = Date.now();
  const [readiness, scrape] = await Promise.all([checkReady(s), scrapeLoad(s)]);
  return { id: s.id, at, ...readiness, ...scrape };
}

const get = (s: State, path: string) => s.pool.request({ method: 'GET', path: new URL(path, s.url).pathname, headersTimeout: s.timeoutMs, bodyTimeout: s.timeoutMs });

const describe = (err: unknown): string => {
  const e = err as { code?: string; message?: string };
  return `${e.code ?? ''} ${e.message ?? String(err)}`.trim();
};

async function checkReady(s: State): Promise<Pick<EndpointProbe, 'ready' | 'reason' | 'models'>> {
  const result = (ready: boolean, reason: string | null, models: string[] = []) => ({ ready, reason, models });
  try {
    const health = await get(s, '/health');
    await health.body.dump();
    if (health.statusCode !== 200) return result(false, `/health answered ${health.statusCode}`);
    const res = await get(s, '/v1/models');
    if (res.statusCode !== 200) {
      await res.body.dump();
      return result(false, `/v1/models answered ${res.statusCode}`);
    }
    const body = (await res.body.json()) as { data?: { id?: unknown }[] };
    const models = (body.data ?? []).map((m) => String(m.id));
    const missing = s.models.filter((m) => !models.includes(m));
    if (missing.length > 0) return result(false, `/v1/models does not list ${missing.join(', ')} (lists ${models.join(', ') || 'nothing'})`, models);
    return result(true, null, models);
  } catch (err) {
    return result(false, `unreachable: ${describe(err)}`);
  }
}

async function scrapeLoad(s: State): Promise<Pick<EndpointProbe, 'load' | 'loadError'>> {
  try {
    const res = await get(s, '/metrics');
    if (res.statusCode !== 200) {
      await res.body.dump();
      return { load: null, loadError: `/metrics answered ${res.statusCode}` };
    }
    return { load: parseEngineLoad(await res.body.text()), loadError: null };
  } catch (err) {
    return { load: null, loadError: `/metrics: ${describe(err)}` };
  }
}
