import { request } from 'undici';
import type { EndpointProbe, EndpointRegistryMsg, HealthPollerMsg } from '../../messages/endpoints.js';
import { defineActor } from '../../runtime/actor.js';

export interface HealthPollerArgs {
  id: string;
  url: string;
  /** The served names this endpoint must list in /v1/models to count as ready. */
  models: string[];
  intervalMs: number;
  timeoutMs: number;
  registry: string;
}

/**
 * Polls one endpoint and reports to the registry. Ready means what it means for vLLM:
 * `/health` answers 200 and `/v1/models` lists the served name — a process that is up
 * but still loading weights refuses connections, and one that lists another model is
 * misconfigured, so neither may receive traffic.
 */
export const healthPoller = defineActor<HealthPollerMsg>()({
  kind: 'health-poller',
  module: import.meta.url,
  // Polls are idempotent ticks: when the actor falls behind, the newest tick is the one worth keeping.
  mailbox: { capacity: 4, overflow: 'drop-oldest' },
  init: (args: HealthPollerArgs, ctx) => {
    ctx.schedule('poll', args.intervalMs, { type: 'poll' }, true);
    ctx.self.tell({ type: 'poll' });
    return args;
  },
  handlers: {
    poll: async (s, _m, ctx) => {
      ctx.ref<EndpointRegistryMsg>(s.registry).tell({ type: 'probe', probe: await probe(s) });
    },
    'poll-now': async (s, _m, ctx) => {
      const p = await probe(s);
      ctx.ref<EndpointRegistryMsg>(s.registry).tell({ type: 'probe', probe: p });
      return p;
    },
  },
});

async function probe(s: HealthPollerArgs): Promise<EndpointProbe> {
  const at = Date.now();
  const result = (ready: boolean, reason: string | null, models: string[] = []): EndpointProbe => ({ id: s.id, ready, reason, models, at });
  try {
    const health = await request(new URL('/health', s.url), { headersTimeout: s.timeoutMs, bodyTimeout: s.timeoutMs });
    await health.body.dump();
    if (health.statusCode !== 200) return result(false, `/health answered ${health.statusCode}`);
    const res = await request(new URL('/v1/models', s.url), { headersTimeout: s.timeoutMs, bodyTimeout: s.timeoutMs });
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
    const e = err as { code?: string; message?: string };
    return result(false, `unreachable: ${e.code ?? ''} ${e.message ?? String(err)}`.trim());
  }
}
