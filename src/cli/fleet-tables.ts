// How `llmgw ctl` shows the control plane's views to a person: pure functions of the
// views (and the clock, passed in), so specs render them without a server.
import type { ReloadResult } from '../admin/reload-result.js';
import { formatProblem } from '../config/index.js';
import type { ModelView, NodeView, PlacementExplanation, ReplicaView, ShardLogs } from '../messages/control.js';
import { formatTable } from './admin-client.js';

/** How long ago wall-clock `at` was, in the largest whole unit: `3s ago`, `4m ago`, `2h ago`, `5d ago`. */
export function ago(at: number | null, now: number): string {
  if (at === null) return 'never';
  const s = Math.max(0, Math.floor((now - at) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86_400)}d ago`;
}

const list = (items: readonly (string | number)[]): string => (items.length === 0 ? '-' : items.join(','));

/**
 * Two tables: one line per node (state, its agent, GPUs by class and how many are free
 * for placement, fabrics with their adapters, replicas), then one line per GPU (class,
 * the replica holding it, why placement skips it).
 */
export function renderNodes(nodes: readonly NodeView[], now: number): string {
  if (nodes.length === 0) return 'no nodes: no agent has registered with this server\n';
  const rows = [['NAME', 'STATE', 'AGENT', 'HEARTBEAT', 'GPUS', 'FREE', 'FABRICS', 'REPLICAS']];
  const gpuRows = [['NODE', 'GPU', 'CLASS', 'ALLOCATED', 'REPLICA', 'PROBLEMS']];
  for (const n of nodes) {
    const byClass = new Map<string, number>();
    for (const g of n.gpus) byClass.set(g.class ?? 'unknown', (byClass.get(g.class ?? 'unknown') ?? 0) + 1);
    const free = n.gpus.filter((g) => !g.allocated && g.problems.length === 0).length;
    rows.push([
      n.name,
      n.state,
      n.connected ? `connected ${n.agent_version}` : 'disconnected',
      ago(n.last_heartbeat_ms, now),
      byClass.size === 0 ? '-' : [...byClass].map(([c, k]) => `${k}x${c}`).join(','),
      `${free}/${n.gpus.length}`,
      list(n.fabrics.map((f) => `${f.name}(${f.hcas.join(',')})`)),
      list(n.replicas),
    ]);
    for (const g of n.gpus) {
      gpuRows.push([n.name, String(g.index), g.class ?? 'unknown', g.allocated ? 'yes' : 'no', g.replica ?? '-', g.problems.join('; ')]);
    }
  }
  return `${formatTable(rows)}\n${formatTable(gpuRows)}`;
}

/** One line per model: the replicas it should have, has and has ready, and why fewer are ready. */
export function renderModels(models: readonly ModelView[]): string {
  const rows = [['MODEL', 'MIN', 'MAX', 'DESIRED', 'READY', 'REPLICAS', 'WHY FEWER']];
  for (const m of models) {
    const retry = m.retry_in_ms === null ? '' : `${m.reason === null ? '' : '; '}next placement in ${Math.ceil(m.retry_in_ms / 1000)}s`;
    rows.push([m.name, String(m.min), String(m.max), String(m.desired), String(m.ready), String(m.replicas), `${m.reason ?? ''}${retry}`]);
  }
  return formatTable(rows);
}

/**
 * One line per shard; the replica's columns on its first shard's line only, so each
 * replica reads as a block. WHY is the replica's reason on that line, then the shard's.
 */
export function renderReplicas(replicas: readonly ReplicaView[], now: number): string {
  if (replicas.length === 0) return 'no replicas\n';
  const rows = [['REPLICA', 'MODEL', 'PROFILE', 'STATE', 'SINCE', 'SHARD', 'NODE', 'RANK', 'GPUS', 'PORT', 'SHARD STATE', 'WHY']];
  for (const r of replicas) {
    const head = [r.id, r.model, r.profile, r.recovered ? `${r.state} (recovered)` : r.state, ago(r.since, now)];
    const blank = head.map(() => '');
    if (r.shards.length === 0) rows.push([...head, '-', '', '', '', '', '', r.reason ?? '']);
    r.shards.forEach((s, i) => {
      const why = i === 0 ? [r.reason, s.reason].filter((w) => w !== null).join('; ') : s.reason ?? '';
      rows.push([...(i === 0 ? head : blank), s.id, s.node, String(s.rank), list(s.gpus), s.port === null ? '-' : String(s.port), s.state, why]);
    });
  }
  return formatTable(rows);
}

/** The verdict on one line, then every candidate (a node, a fabric or a whole profile) and why it was rejected. */
export function renderExplanation(e: PlacementExplanation): string {
  const verdict = e.placement
    ? `${e.model}: a replica can be placed now, with profile ${e.placement.profile} on ${e.placement.nodes.join(', ')}\n`
    : `${e.model}: no replica can be placed now\n`;
  if (e.candidates.length === 0) return verdict;
  const rows = [['PROFILE', 'NODE', 'FABRIC', 'CODE', 'REASON']];
  for (const c of e.candidates) rows.push([c.profile, c.node ?? '-', c.fabric ?? '-', c.code, c.reason]);
  return `${verdict}\n${formatTable(rows)}`;
}

/** What a node command left the node as. */
export function renderNodeState(node: NodeView): string {
  return `node ${node.name} is ${node.state}\n`;
}

/** Each shard's lines under a header naming it and its node, as `tail` shows several files. */
export function renderLogs(logs: readonly ShardLogs[]): string {
  return logs
    .map((l) => {
      const header = `==> shard ${l.shard} on node ${l.node} <==\n`;
      if (l.error !== null) return `${header}(could not read its output: ${l.error})\n`;
      return header + l.lines.map((line) => `${line}\n`).join('');
    })
    .join('\n');
}

/** What a reload changed, or every problem of the file that was not applied. */
export function renderReload(r: ReloadResult): string {
  if (!r.ok) return `${r.source} was not applied; the server runs on as before. Its problems:\n${r.problems.map((p) => `  ${formatProblem(p)}\n`).join('')}`;
  const { added, removed, changed } = r.models;
  const restart = r.restart_needed.length === 0 ? '' : `  not applied until a restart: ${r.restart_needed.join(', ')}\n`;
  if (added.length + removed.length + changed.length === 0) return `reloaded ${r.source}: no model changed\n${restart}`;
  const part = (what: string, names: readonly string[]): string[] => (names.length === 0 ? [] : [`  ${what}: ${names.join(', ')}\n`]);
  return [`reloaded ${r.source}:\n`, ...part('added', added), ...part('removed (drained, then stopped)', removed), ...part('changed', changed), restart].join('');
}
