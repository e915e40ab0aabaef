import type { ConfiguredEndpoint, EndpointProbe, EndpointRegistryMsg, PlacedEndpoint } from '../../messages/endpoints.js';
import { defineActor } from '../../runtime/actor.js';
import type { EndpointSpec, EndpointState, EndpointTable } from '../../router/endpoint-table.js';

export interface EndpointRegistryArgs {
  table: EndpointTable;
  /** Ids of the endpoints the config lists (a `configured` update replaces them); none when unset. */
  configured?: readonly string[];
  /**
   * Called with the endpoints an update added and the ids it removed, and awaited
   * before the update is answered: the server starts their pollers there and probes
   * the new ones once, so "applied" means the router can route to them.
   */
  onChange?: (added: readonly EndpointState[], removed: readonly string[]) => Promise<void>;
}

/**
 * Applies probes to the endpoint table the data port reads. It runs on the main thread
 * and is handed the table itself (main-thread spawn arguments are not copied), so a
 * probe becomes visible to the next request without a cross-thread read.
 */
export const endpointRegistry = defineActor<EndpointRegistryMsg>()({
  kind: 'endpoint-registry',
  module: import.meta.url,
  // Probes are samples: a lost one is replaced by the endpoint's next poll, and a
  // registry that has fallen behind should apply the newest rather than the oldest.
  // A `placed` update is the control plane's whole set, so the newest is also the one to keep.
  mailbox: { capacity: 4096, overflow: 'drop-oldest' },
  init: (args: EndpointRegistryArgs, ctx) => {
    if (ctx.thread !== 'main') throw new Error('endpoint-registry must run on the main thread, beside the data port');
    return { ...args, placed: new Set<string>(), configured: new Set(args.configured ?? []) };
  },
  handlers: {
    probe: (s, m, ctx) => {
      const was = s.table.get(m.probe.id)?.ready;
      s.table.apply(m.probe);
      if (was !== m.probe.ready) {
        if (m.probe.ready) ctx.log.info('endpoint ready', { endpoint: m.probe.id });
        else ctx.log.warn('endpoint not ready', { endpoint: m.probe.id, reason: m.probe.reason });
      }
    },
    load: (s, m) => s.table.applyLoad(m.id, m.at, m.load, m.loadError),
    list: (s): EndpointProbe[] =>
      s.table.all().map((e) => ({
        id: e.id,
        ready: e.ready,
        reason: e.reason,
        models: [...e.models],
        maxModelLen: e.maxModelLen,
        at: e.probedAt ?? 0,
        load: e.load,
        loadError: e.loadError,
      })),
    placed: async (s, m, ctx) => {
      // Endpoints from the config (and simulated ones) stay as they are.
      const { added, removed } = await replace(s, s.placed, m.endpoints.map(placedSpec));
      s.placed = new Set(m.endpoints.map((e) => e.id));
      if (added.length > 0 || removed.length > 0) ctx.log.info('placed replicas changed', { version: m.version, added, removed });
      return { version: m.version, added, removed };
    },
    configured: async (s, m, ctx) => {
      const { added, removed } = await replace(s, s.configured, m.endpoints.map(configuredSpec));
      s.configured = new Set(m.endpoints.map((e) => e.id));
      if (added.length > 0 || removed.length > 0) ctx.log.info('configured endpoints changed', { added, removed });
      return { added, removed };
    },
  },
});

/** Replaces the endpoints in `group` with `next`, keeping every other one as it is. */
async function replace(s: Pick<EndpointRegistryArgs, 'table' | 'onChange'>, group: ReadonlySet<string>, next: EndpointSpec[]): Promise<{ added: string[]; removed: string[] }> {
  const kept = s.table.all().filter((e) => !group.has(e.id)).map(specOf);
  const { added, removed } = s.table.update([...kept, ...next]);
  await s.onChange?.(added.map((id) => s.table.get(id)!), removed);
  return { added, removed };
}

function specOf(e: EndpointState): EndpointSpec {
  // What the config or launch said, not what the engine published: the table reads that again from the engine.
  return { id: e.id, url: e.url, models: e.models, weight: e.weight, priority: e.priority, pool: e.pool, ...e.configured, gpus: e.gpus };
}

function placedSpec(e: PlacedEndpoint): EndpointSpec {
  return { id: e.id, url: e.url, models: e.models, weight: e.weight, priority: 0, pool: null, batchSize: e.batchSize, stepBudget: e.stepBudget ?? null, enginePriority: e.enginePriority ?? null, gpus: e.gpus };
}

function configuredSpec(e: ConfiguredEndpoint): EndpointSpec {
  return { ...placedSpec(e), priority: e.priority, pool: e.pool, enginePriority: e.enginePriority, stepBudget: e.stepBudget ?? null };
}
