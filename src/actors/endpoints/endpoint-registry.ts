import type { EndpointProbe, EndpointRegistryMsg } from '../../messages/endpoints.js';
import { defineActor } from '../../runtime/actor.js';
import type { EndpointTable } from '../../router/endpoint-table.js';

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
  mailbox: { capacity: 4096, overflow: 'drop-oldest' },
  init: (args: { table: EndpointTable }, ctx) => {
    if (ctx.thread !== 'main') throw new Error('endpoint-registry must run on the main thread, beside the data port');
    return args;
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
  },
});
