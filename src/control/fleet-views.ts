// What `llmgw ctl` shows of the reconciler's state: nodes, models, replicas and
// placement explanations as the plain views of src/messages/control.ts.
import type { FleetNodeState, ModelView, NodeView, PlacementExplanation, ReplicaView } from '../messages/control.js';
import type { PlacementResult } from './placement.js';
import type { Reconciler } from './reconciler.js';
import { ACTIVE, type ReplicaRecord } from './replica.js';

export function nodeViews(rec: Reconciler): NodeView[] {
  const holders = new Map<string, string[]>();
  for (const r of rec.replicas()) for (const s of r.shards) if (s) holders.set(s.node, [...(holders.get(s.node) ?? []), r.id]);
  return rec.inventory.nodes().map((n): NodeView => {
    const meta = rec.nodeMeta(n.id)!;
    const state: FleetNodeState = n.state === 'unreachable' || n.state === 'lost' ? n.state : meta.drainingSince !== null ? 'draining' : n.state;
    return {
      name: n.id,
      state,
      address: n.address,
      last_heartbeat_ms: meta.lastSeen,
      connected: meta.connected,
      agent_version: meta.report.agentVersion,
      engine_versions: { ...meta.report.engineVersions },
      gpus: n.gpus.map((g) => {
        const replica = n.holderOf(g.index);
        return { index: g.index, class: g.class, allocated: replica !== null, replica, problems: [...g.problems] };
      }),
      fabrics: n.fabrics.map((f) => ({ name: f.name, hcas: [...f.hcas], link_layer: f.linkLayer })),
      replicas: holders.get(n.id) ?? [],
    };
  });
}

export function replicaViews(rec: Reconciler, model?: string): ReplicaView[] {
  const out: ReplicaView[] = [];
  for (const r of rec.replicas()) if (model === undefined || r.model === model) out.push(replicaView(r));
  return out.sort((a, b) => (a.model === b.model ? (a.id < b.id ? -1 : 1) : a.model < b.model ? -1 : 1));
}

function replicaView(r: ReplicaRecord): ReplicaView {
  return {
    id: r.id,
    model: r.model,
    profile: r.profile,
    state: r.state,
    reason: r.reason,
    since: r.since,
    url: r.endpoint.url,
    recovered: r.recovered,
    shards: r.shards.flatMap((s) =>
      s
        ? [
            {
              id: s.id,
              node: s.node,
              rank: s.rank,
              gpus: s.spec.gpus.map((g) => g.index),
              port: r.placement.shards.find((p) => p.rank === s.rank)?.httpPort ?? null,
              state: s.gone ? 'unknown' : s.state,
              reason: s.gone ? 'its node is lost' : s.reason,
            },
          ]
        : [],
    ),
  };
}

export function modelViews(rec: Reconciler, now: number): ModelView[] {
  const names = new Set([...rec.models.keys(), ...[...rec.replicas()].map((r) => r.model)]);
  return [...names].map((name): ModelView => {
    const m = rec.models.get(name);
    const mine = [...rec.replicas()].filter((r) => r.model === name);
    const ready = mine.filter((r) => r.state === 'ready' && r.leaving === null).length;
    const desired = rec.desired(name);
    const backoff = rec.backoffOf(name);
    const retryIn = backoff && backoff.notBefore > now ? backoff.notBefore - now : null;
    return {
      name,
      min: m?.scaling.min ?? 0,
      max: m?.scaling.max ?? 0,
      desired,
      ready,
      replicas: mine.length,
      reason: ready >= desired ? null : whyFewer(rec, name, mine, retryIn),
      retry_in_ms: retryIn,
    };
  });
}

function whyFewer(rec: Reconciler, model: string, mine: readonly ReplicaRecord[], retryIn: number | null): string {
  const starting = mine.filter((r) => (r.state === 'pending' || r.state === 'starting') && r.leaving === null);
  const parts: string[] = [];
  if (starting.length > 0) parts.push(`${starting.length} starting`);
  const failed = mine.find((r) => r.state === 'failed');
  if (failed) parts.push(`replica ${failed.id} failed: ${failed.reason ?? 'no reason given'}`);
  if (retryIn !== null) parts.push(`next attempt in ${Math.ceil(retryIn / 1000)} s (backing off after failures)`);
  const attempt = rec.lastAttempt(model);
  if (attempt && !attempt.placement) parts.push(`cannot place: ${summarise(attempt)}`);
  if (parts.length === 0 && mine.filter((r) => ACTIVE.has(r.state)).length === 0) parts.push('not placed yet (waiting for agents to report)');
  return parts.join('; ') || 'replacements starting';
}

/** The first rejection, with a count of the rest. */
function summarise(r: PlacementResult): string {
  if (r.rejections.length === 0) return 'no node has registered';
  const first = r.rejections[0]!;
  return `${first.reason}${r.rejections.length > 1 ? ` (and ${r.rejections.length - 1} more candidates rejected; see ctl explain-placement)` : ''}`;
}

export function explanation(model: string, r: PlacementResult): PlacementExplanation {
  return {
    model,
    placed: r.placement !== null,
    placement: r.placement ? { profile: r.placement.profile, nodes: r.placement.shards.map((s) => s.node) } : null,
    candidates: r.rejections.map((x) => ({ node: x.node, fabric: x.fabric, profile: x.profile, code: x.code, reason: x.reason })),
  };
}
