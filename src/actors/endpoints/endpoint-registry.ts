import type { EndpointProbe, EndpointRegistryMsg, PlacedEndpoint } from '../../messages/endpoints.js';
import { defineActor } from '../../runtime/actor.js';
import type { EndpointSpec, EndpointState, EndpointTable } from '../../router/endpoint-table.js';

export interface EndpointRegistryArgs {
  table: EndpointTable;
  /**
   * Called with the endpoints a `placed` update added and the ids it removed, and
   * awaited before the update is answered: the server starts their pollers there and
   * probes the new ones once, so "applied" means the router can route to them.
   */
  onPlaced?: (added: readonly EndpointState[], removed: readonly string[]) => Promise<void>;
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
    return { ...args, placed: new Set<string>() };
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
      const kept = s.table.all().filter((e) => !s.placed.has(e.id)).map(specOf);
      const { added, removed } = s.table.update([...kept, ...m.endpoints.map(placedSpec)]);
      s.placed = new Set(m.endpoints.map((e) => e.id));
      if (added.length > 0 || removed.length > 0) ctx.log.info('placed replicas changed', { version: m.version, added, removed });
      await s.onPlaced?.(added.map((id) => s.table.get(id)!), removed);
      return { version: m.version, added, removed };
    },
  },
});

function specOf(e: EndpointState): EndpointSpec {
  return { id: e.id, url: e.url, models: e.models, weight: e.weight, priority: e.priority, pool: e.pool, batchSize: e.batchSize, enginePriority: e.enginePriority };
}

function placedSpec(e: PlacedEndpoint): EndpointSpec {
  return { id: e.id, url: e.url, models: e.models, weight: e.weight, priority: 0, pool: null, batchSize: e.batchSize };
}
