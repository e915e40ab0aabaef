import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { LlmgwError } from '../../errors.js';
import type { Outcome } from '../../messages/agent.js';
import type { PlacedModel } from '../../messages/catalog.js';
import type { ControlMsg, ShardLogs } from '../../messages/control.js';
import { ENDPOINT_REGISTRY } from '../../messages/endpoints.js';
import type { AgentMessage } from '../../messages/gen/llmgw/agent/v1/agent_pb.js';
import { shardSpecToWire } from '../../messages/shard-spec-wire.js';
import { shardStatusFromWire } from '../../messages/shard-status-wire.js';
import { controlMetrics, type ControlMetrics } from '../../control/control-metrics.js';
import { explanation, modelViews, nodeViews, replicaViews } from '../../control/fleet-views.js';
import { Reconciler, type AgentCommand } from '../../control/reconciler.js';
import { readRoster, writeRoster } from '../../control/roster.js';
import { reportFromRegister } from '../../control/stream/agent-reports.js';
import { createAgentStreamServer, type AgentStreamServer, type ControlMessageInit } from '../../control/stream/agent-stream-server.js';
import type { ActorContext } from '../../runtime/index.js';
import { defineActor } from '../../runtime/actor.js';

export interface ControlActorArgs {
  readonly models: PlacedModel[];
  /** HOST:PORT of the agent stream. */
  readonly listen: string;
  /** File paths of the fleet's CA and this server's certificate and key; null: plaintext, asked for by name. */
  readonly tls: { readonly ca: string; readonly cert: string; readonly key: string } | null;
  readonly intervalMs: number;
  readonly unreachableAfterMs: number;
  readonly lostAfterMs: number;
  readonly drainGraceMs: number;
  readonly settleMs: number;
  readonly portRange: readonly [number, number];
  /** The roster file (control/roster.ts). */
  readonly rosterPath: string;
}

/** One agent's open stream. A newer stream for the same node supersedes it. */
interface Link {
  readonly send: (msg: ControlMessageInit) => void;
}

interface State {
  readonly rec: Reconciler;
  readonly server: AgentStreamServer;
  readonly links: Map<string, Link>;
  readonly outputs: Map<string, (out: ShardLogs) => void>;
  readonly metrics: ControlMetrics;
  /** A publication is on its way to the router; the next waits for its answer. */
  publishing: boolean;
  readonly rosterPath: string;
}

/** How long `ctl logs` waits for an agent to send a shard's output. */
const LOGS_TIMEOUT_MS = 5_000;

/**
 * The control plane's actor, on the `control` worker thread: the reconciler, and the
 * agent stream server whose streams feed it. Stream messages are applied as they
 * arrive (same thread, synchronous), not queued behind admin asks, so that ten thousand
 * agents' heartbeats never wait on a `ctl logs`. After every change, commands go out on
 * the agents' streams and the ready replicas go to the router's endpoint registry.
 */
export const controlActor = defineActor<ControlMsg>()({
  kind: 'control',
  module: import.meta.url,
  mailbox: { capacity: 1024, overflow: 'reject' },
  init: async (args: ControlActorArgs, ctx): Promise<State> => {
    const roster = readRoster(args.rosterPath);
    if (roster.problem) ctx.log.warn('roster unreadable: waiting the whole settle period after a restart', { problem: roster.problem });
    else if (roster.nodes.length > 0) ctx.log.info('waiting for the nodes of the roster to report before placing', { nodes: roster.nodes.length, settleMs: args.settleMs });
    const rec = new Reconciler(
      {
        portRange: args.portRange,
        unreachableAfterMs: args.unreachableAfterMs,
        lostAfterMs: args.lostAfterMs,
        drainGraceMs: args.drainGraceMs,
        settleMs: args.settleMs,
        expectedNodes: roster.nodes,
        resendMs: Math.max(2_000, args.intervalMs * 5),
        backoff: { baseMs: 2_000, maxMs: 300_000 },
        random: Math.random,
        onEvent: (event, fields) => ctx.log[event.includes('failed') || event.includes('lost') ? 'warn' : 'info'](event, fields),
      },
      args.models,
    );
    const links = new Map<string, Link>();
    const outputs = new Map<string, (out: ShardLogs) => void>();
    const metrics = controlMetrics(ctx.metrics);
    const state = { rec, links, outputs, metrics, publishing: false, rosterPath: args.rosterPath } as Omit<State, 'server'> & { server?: AgentStreamServer };
    const security = args.tls ? { tls: { ca: readFileSync(args.tls.ca), cert: readFileSync(args.tls.cert), key: readFileSync(args.tls.key) } } : ({ insecure: true } as const);
    state.server = await createAgentStreamServer({
      ...security,
      listen: args.listen,
      onStream: async (node, incoming, send) => {
        const link: Link = { send };
        try {
          for await (const msg of incoming) {
            if (msg.body.case === 'register') {
              links.set(node, link);
              metrics.agentsConnected.set(links.size);
            }
            else if (links.get(node) !== link) continue; // superseded by a newer stream
            onAgentMessage(state as State, node, msg, ctx);
          }
        } finally {
          if (links.get(node) === link) {
            links.delete(node);
            metrics.agentsConnected.set(links.size);
            rec.disconnected(node);
            ctx.log.info('agent stream closed', { node });
          }
        }
      },
    });
    ctx.log.info('agent stream listening', { url: state.server.url, tls: args.tls !== null });
    ctx.schedule('tick', args.intervalMs, { type: 'tick' }, true);
    return state as State;
  },
  handlers: {
    tick: (s, _m, ctx) => {
      s.rec.tick(Date.now());
      flush(s, ctx);
      saveRoster(s, ctx);
    },
    'router-applied': (s, m, ctx) => {
      s.publishing = false;
      s.rec.routerApplied(m.version);
      flush(s, ctx);
    },
    address: (s) => s.server.url,
    nodes: (s) => nodeViews(s.rec),
    models: (s) => modelViews(s.rec, Date.now()),
    replicas: (s, m) => replicaViews(s.rec, m.model),
    explain: (s, m) => outcome(() => explanation(m.model, s.rec.explain(m.model))),
    cordon: (s, m, ctx) => operate(s, ctx, m.node, () => s.rec.cordon(m.node)),
    uncordon: (s, m, ctx) => operate(s, ctx, m.node, () => s.rec.uncordon(m.node)),
    drain: (s, m, ctx) => operate(s, ctx, m.node, () => s.rec.drain(m.node, Date.now())),
    logs: (s, m) => logs(s, m.target, m.lines),
    catalog: (s, m, ctx) => {
      const changes = s.rec.setCatalog(m.models);
      ctx.log.info('catalog reloaded', changes);
      s.rec.tick(Date.now());
      flush(s, ctx);
      return changes;
    },
  },
  onStop: (s) => s.server.close(),
  describe: (s) => `${s.links.size} agents connected, ${[...s.rec.replicas()].length} replicas`,
});

function onAgentMessage(s: State, node: string, msg: AgentMessage, ctx: ActorContext<ControlMsg>): void {
  const now = Date.now();
  switch (msg.body.case) {
    case 'register': {
      const { report, running } = reportFromRegister(msg.body.value);
      s.rec.register(report, running, now);
      ctx.log.info('agent registered', { node, gpus: report.gpus.length, fabrics: report.fabrics.map((f) => f.name), running: running.length });
      return flush(s, ctx);
    }
    case 'heartbeat': {
      // Unset (0): an agent that does not stamp its heartbeats says nothing about lag.
      const sent = Number(msg.body.value.unixMs);
      if (sent > 0) s.metrics.heartbeatLag.observe(Math.max(0, now - sent) / 1000);
      return s.rec.heartbeat(node, now);
    }
    case 'shardStatus':
      s.rec.shardStatus(node, shardStatusFromWire(msg.body.value), now);
      return flush(s, ctx);
    case 'shardOutput': {
      const o = msg.body.value;
      s.outputs.get(o.requestId)?.({ shard: o.shardId, node, lines: [...o.lines], error: o.error === '' ? null : o.error });
      return;
    }
    default:
      return;
  }
}

/**
 * Writes the roster when its nodes changed: once a tick at most, so that a fleet
 * registering at once (thousands of agents after a restart) costs one write, not one each.
 */
function saveRoster(s: State, ctx: ActorContext<ControlMsg>): void {
  const roster = s.rec.rosterChange();
  if (!roster) return;
  try {
    writeRoster(s.rosterPath, roster);
  } catch (err) {
    ctx.log.warn('roster not written: a restart will wait the whole settle period', { path: s.rosterPath, error: LlmgwError.from(err).message });
  }
}

/** Sends what the reconciler wants sent, and the endpoint set when it changed. */
function flush(s: State, ctx: ActorContext<ControlMsg>): void {
  for (const d of s.rec.dispatches(Date.now())) {
    const link = s.links.get(d.node);
    if (!link) continue;
    try {
      link.send(toWire(d.command));
    } catch (err) {
      // Refused, never dropped: the reconciler sends it again after its resend interval.
      ctx.log.warn('command to agent not sent; it will be sent again', { node: d.node, command: d.command.kind, shard: d.command.shard, error: LlmgwError.from(err).message });
    }
  }
  if (s.publishing) return;
  const pub = s.rec.publication();
  if (!pub) return;
  s.publishing = true;
  ctx
    .ref(ENDPOINT_REGISTRY)
    .ask({ type: 'placed', version: pub.version, endpoints: pub.endpoints }, { timeoutMs: 30_000 })
    .then(
      (r) => ctx.self.tell({ type: 'router-applied', version: r.version }),
      (err: unknown) => {
        ctx.log.error('the router did not take the replica set; publishing again', { version: pub.version, error: err });
        s.publishing = false;
        s.rec.forgetPublication();
      },
    );
}

function toWire(c: AgentCommand): ControlMessageInit {
  switch (c.kind) {
    case 'start':
      return { body: { case: 'startShard', value: { shardId: c.shard, spec: shardSpecToWire(c.spec) } } };
    case 'stop':
      return { body: { case: 'stopShard', value: { shardId: c.shard, graceSeconds: Math.ceil(c.graceMs / 1000) } } };
    case 'drain':
      return { body: { case: 'drainShard', value: { shardId: c.shard, graceSeconds: Math.ceil(c.graceMs / 1000) } } };
  }
}

function operate(s: State, ctx: ActorContext<ControlMsg>, node: string, fn: () => void) {
  const result = outcome(() => {
    fn();
    return nodeViews(s.rec).find((n) => n.name === node)!;
  });
  if (result.ok) {
    s.rec.tick(Date.now());
    flush(s, ctx);
  }
  return result;
}

/** Every shard of a replica, or one shard: each asked of its agent, at once. */
async function logs(s: State, target: string, lines: number): Promise<Outcome<ShardLogs[]>> {
  const replicas = [...s.rec.replicas()];
  const shards = replicas.find((r) => r.id === target)?.shards.flatMap((x) => (x ? [x] : [])) ?? replicas.flatMap((r) => r.shards.flatMap((x) => (x && x.id === target ? [x] : [])));
  if (shards.length === 0) return { ok: false, error: new LlmgwError('LLMGW_NOT_FOUND', `no replica or shard '${target}' (see ctl replicas)`).serialize() };
  const one = (shard: string, node: string): Promise<ShardLogs> => {
    const link = s.links.get(node);
    if (!link) return Promise.resolve({ shard, node, lines: [], error: `node ${node} is not connected` });
    const requestId = randomUUID();
    return new Promise<ShardLogs>((resolve) => {
      const timer = setTimeout(() => finish({ shard, node, lines: [], error: `node ${node} did not answer within ${LOGS_TIMEOUT_MS} ms` }), LOGS_TIMEOUT_MS);
      const finish = (out: ShardLogs): void => {
        clearTimeout(timer);
        s.outputs.delete(requestId);
        resolve(out);
      };
      s.outputs.set(requestId, finish);
      try {
        link.send({ body: { case: 'requestShardOutput', value: { requestId, shardId: shard, lines } } });
      } catch (err) {
        finish({ shard, node, lines: [], error: LlmgwError.from(err).message });
      }
    });
  };
  return { ok: true, value: await Promise.all(shards.map((x) => one(x.id, x.node))) };
}

function outcome<T>(fn: () => T): Outcome<T> {
  try {
    return { ok: true, value: fn() };
  } catch (err) {
    return { ok: false, error: LlmgwError.from(err).serialize() };
  }
}
