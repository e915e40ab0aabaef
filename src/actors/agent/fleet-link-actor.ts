import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import type { AgentConfig } from '../../agent/config/schema.js';
import { discoverInventory, type DiscoveryKnobs } from '../../agent/discovery/index.js';
import { createAgentStreamClient, type AgentStreamClient } from '../../agent/stream/agent-stream-client.js';
import { FleetLink } from '../../agent/stream/fleet-link.js';
import { pidsInGroups } from '../../agent/supervisor/index.js';
import { SUPERVISOR, type FleetLinkMsg } from '../../messages/agent.js';
import { defineActor } from '../../runtime/actor.js';
import { VERSION } from '../../version.js';

export interface FleetLinkActorArgs {
  /** With `server` set: the loader has checked that tls or insecure agrees with it. */
  readonly config: AgentConfig;
  readonly knobs: DiscoveryKnobs;
}

interface State {
  readonly link: FleetLink;
  readonly client: AgentStreamClient;
  readonly stop: AbortController;
  readonly running: Promise<void>;
}

/**
 * The node's stream to the control plane as an actor, beside the supervisor on the
 * agent's worker thread, so every command and shard event is a local call. init opens
 * the stream and returns at once; the stream lives until onStop, which closes it and
 * leaves the engines alone (stopping them is the control plane's decision).
 */
export const fleetLinkActor = defineActor<FleetLinkMsg>()({
  kind: 'agent-fleet-link',
  module: import.meta.url,
  // A shard event refused when full is no loss: the next Register carries every shard.
  mailbox: { capacity: 256, overflow: 'reject' },
  init: (args: FleetLinkActorArgs, ctx): State => {
    const { config, knobs } = args;
    const url = config.server!;
    const client = config.tls
      ? createAgentStreamClient({ url, tls: { ca: readFileSync(config.tls.ca), cert: readFileSync(config.tls.cert), key: readFileSync(config.tls.key) } })
      : createAgentStreamClient({ url, insecure: true });
    const supervisor = ctx.ref(SUPERVISOR);
    // The role also names this actor among the supervisor's spawn-time subscribers, which
    // survive a restart of the supervisor; subscribing here covers a supervisor that did not.
    supervisor.tell({ type: 'subscribe', subscriber: ctx.self.address });
    const link = new FleetLink({
      client,
      nodeId: config.node_id,
      hostname: hostname(),
      mgmtAddr: config.mgmt_addr,
      mgmtInterface: config.mgmt_interface,
      agentVersion: VERSION,
      heartbeatIntervalMs: config.heartbeat_interval_ms,
      log: ctx.log,
      shards: {
        list: () => supervisor.ask({ type: 'list' }),
        start: (id, spec) => supervisor.ask({ type: 'start', id, spec }),
        stop: (id) => supervisor.ask({ type: 'stop', id }),
        output: (id, lines) => supervisor.ask({ type: 'output', id, lines }),
      },
      discover: (running) =>
        discoverInventory({
          nvidiaSmi: config.nvidia_smi,
          ibRoot: config.ib_root,
          noGpu: config.no_gpu,
          fabrics: config.fabrics,
          ours: pidsInGroups(new Set(running.flatMap((s) => s.processes.map((p) => p.pgid)))),
          knobs,
        }),
    });
    const stop = new AbortController();
    ctx.log.info('joining the fleet', { server: url, nodeId: config.node_id, mgmtAddr: config.mgmt_addr });
    return { link, client, stop, running: link.run(stop.signal) };
  },
  handlers: {
    'shard-event': (s, m) => s.link.shardEvent(m.event),
  },
  onStop: async (s) => {
    s.stop.abort();
    await s.running;
    s.client.close();
  },
});
