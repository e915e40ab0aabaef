// Placement of one replica of a model: which profile, which nodes, which GPUs, HCAs and
// ports. Pure: it reads NodeViews and returns a decision, with every candidate it turned
// down and why (`llmgw ctl explain-placement` prints them). Inventory.allocate commits it.
//
// Two rules are kept by the shape of the code, not by a check afterwards: a replica's
// shards are only ever drawn from one Pool, and a pool is one GPU class on one fabric
// (or on one node). A member carries only its pool's class of GPUs and only its pool's
// fabric's HCAs, so no path can mix classes in a group or give a shard a second
// fabric's adapters. Getting either wrong gives a replica that starts, passes its health
// checks and then hangs or crawls under load.
import type { FleetGpu } from '../messages/fleet.js';
import type { EngineKind, ShardGpu, VllmLaunchMode } from '../messages/shard-spec.js';
import { chooseGpus } from './gpu-choice.js';
import { portNeeds, type PortNeeds } from './engine-ports.js';
import type { NodeView } from './inventory.js';

/** What placement reads of a catalog profile (`models[].profiles[]`), plus the vLLM launch mode. */
export interface PlacementProfile {
  readonly name: string;
  readonly engine: EngineKind;
  readonly gpu_class: string;
  readonly tp: number;
  readonly pp: number;
  readonly nodes: number;
  /** Required for a multi-node vLLM profile: which one works depends on the vLLM version. */
  readonly launch_mode?: VllmLaunchMode;
}

export interface PlacementRequest {
  readonly model: string;
  /** Id of the replica to place; its shards are `${replica}` rank 0…n-1. */
  readonly replica: string;
  /** Highest priority first: the first that fits is used. */
  readonly profiles: readonly PlacementProfile[];
  /** Inclusive range engine ports are handed out from. */
  readonly portRange: readonly [number, number];
}

export interface ShardPlacement {
  readonly node: string;
  /** The node's management address: rank 0's is the rendezvous address. */
  readonly address: string;
  readonly rank: number;
  readonly gpus: readonly ShardGpu[];
  /** The replica fabric's adapters on this node, and no others; empty single-node. */
  readonly hcas: readonly string[];
  /** Null for a rank that opens no HTTP server. */
  readonly httpPort: number | null;
  /** Every port this shard holds on its node (HTTP, rendezvous block, fixed ones). */
  readonly ports: readonly number[];
}

export interface ReplicaPlacement {
  readonly replica: string;
  readonly model: string;
  readonly profile: string;
  readonly engine: EngineKind;
  readonly launchMode: VllmLaunchMode | undefined;
  readonly gpuClass: string;
  /** Null for a single-node replica: nothing leaves the node. */
  readonly fabric: { readonly name: string; readonly linkLayer: 'InfiniBand' | 'Ethernet' } | null;
  /** On rank 0; null single-node. */
  readonly rendezvousPort: number | null;
  /** By rank. */
  readonly shards: readonly ShardPlacement[];
}

/** Why a candidate was turned down. `code` is the discriminant for tools; `reason` is for people. */
export type RejectionCode =
  | 'profile-invalid'
  | 'node-not-ready'
  | 'no-gpu-of-class'
  | 'too-few-free-gpus'
  | 'no-free-port'
  | 'fixed-port-taken'
  | 'no-fabric'
  | 'fabric-without-hcas'
  | 'fabric-too-small';

export interface Rejection {
  readonly profile: string;
  /** Null when the candidate is the profile itself or a whole fabric. */
  readonly node: string | null;
  readonly fabric: string | null;
  readonly code: RejectionCode;
  readonly reason: string;
}

export interface PlacementResult {
  readonly placement: ReplicaPlacement | null;
  /** In the order the candidates were tried. */
  readonly rejections: readonly Rejection[];
}

/** A node that can give the profile enough GPUs: only its pool's class, only its pool's HCAs. */
interface Member {
  readonly node: NodeView;
  readonly free: readonly FleetGpu[];
  readonly hcas: readonly string[];
}

/** One GPU class on one fabric (`fabric` null: a single node). A replica is formed inside one. */
interface Pool {
  readonly gpuClass: string;
  readonly fabric: { readonly name: string; readonly linkLayer: 'InfiniBand' | 'Ethernet' } | null;
  readonly members: readonly Member[];
}

/** The highest-priority profile that fits, or every reason none does. */
export function placeReplica(nodes: readonly NodeView[], req: PlacementRequest): PlacementResult {
  const rejections: Rejection[] = [];
  for (const profile of req.profiles) {
    const placement = placeProfile(nodes, req, profile, rejections);
    if (placement) return { placement, rejections };
  }
  return { placement: null, rejections };
}

/** One line per rejection, as `ctl explain-placement` prints them. */
export function explainPlacement(model: string, r: PlacementResult): string {
  const head = r.placement
    ? `${model}: placed with profile ${r.placement.profile} on ${r.placement.shards.map((s) => s.node).join(', ')}`
    : `${model}: no profile fits`;
  const lines = r.rejections.map((x) => `  ${x.profile} @ ${x.node ?? (x.fabric ? `fabric ${x.fabric}` : '-')}: ${x.reason}`);
  return [head, ...lines].join('\n');
}

function placeProfile(nodes: readonly NodeView[], req: PlacementRequest, p: PlacementProfile, out: Rejection[]): ReplicaPlacement | null {
  const reject = (code: RejectionCode, reason: string, node: string | null = null, fabric: string | null = null): void => {
    out.push({ profile: p.name, node, fabric, code, reason });
  };
  const total = p.tp * p.pp;
  if (!(p.nodes >= 1 && Number.isInteger(p.nodes) && total % p.nodes === 0)) {
    reject('profile-invalid', `tp × pp = ${total} GPUs do not split evenly over ${p.nodes} nodes`);
    return null;
  }
  if (p.nodes > 1 && p.engine === 'vllm' && p.launch_mode === undefined) {
    reject('profile-invalid', 'a multi-node vLLM profile needs a launch mode (ray or mp): which one works depends on the vLLM version');
    return null;
  }
  const perNode = total / p.nodes;
  const [lo, hi] = req.portRange;

  // The checks every candidate node faces, whatever its pool.
  const gpusFor = (n: NodeView): FleetGpu[] | null => {
    if (n.state !== 'ready') {
      reject('node-not-ready', NOT_READY[n.state as Exclude<NodeView['state'], 'ready'>], n.id);
      return null;
    }
    const free: FleetGpu[] = [];
    let ofClass = 0;
    for (const g of n.gpus) {
      if (g.class !== p.gpu_class) continue;
      ofClass++;
      if (g.problems.length === 0 && g.computeCapability !== null && n.holderOf(g.index) === null) free.push(g);
    }
    if (ofClass === 0) {
      reject('no-gpu-of-class', `has no ${p.gpu_class} GPUs (${classesOf(n)})`, n.id);
      return null;
    }
    if (free.length < perNode) {
      reject('too-few-free-gpus', `has ${free.length} of its ${ofClass} ${p.gpu_class} GPUs free, needs ${perNode}${whyNotFree(n, p.gpu_class)}`, n.id);
      return null;
    }
    return free;
  };

  if (p.nodes === 1) {
    const members: Member[] = [];
    for (const n of nodes) {
      const free = gpusFor(n);
      if (free) members.push({ node: n, free, hcas: [] });
    }
    // Fewest replicas of this model first (spread, so one node's loss takes one
    // replica), then the fullest node: filling partly used nodes keeps whole nodes free
    // for the models that need all of one.
    members.sort((a, b) => a.node.replicasOf(req.model) - b.node.replicasOf(req.model) || a.free.length - b.free.length);
    for (const m of members) {
      const ports = portsFor(m.node, portNeeds(p.engine, p.launch_mode, 1, 0), lo, hi);
      if (typeof ports === 'string') {
        reject(ports === FIXED ? 'fixed-port-taken' : 'no-free-port', portReason(ports, lo, hi), m.node.id);
        continue;
      }
      return formReplica(req, p, { gpuClass: p.gpu_class, fabric: null, members: [m] }, [0], [ports]);
    }
    return null;
  }

  // Multi-node: candidates gathered per fabric, and a replica formed inside one.
  const pools = new Map<string, { linkLayer: 'InfiniBand' | 'Ethernet'; members: Member[] }>();
  for (const n of nodes) {
    if (n.fabrics.length === 0) {
      reject('no-fabric', `is on no fabric; a ${p.nodes}-node replica needs nodes of one fabric`, n.id);
      continue;
    }
    const free = gpusFor(n);
    if (!free) continue;
    for (const f of n.fabrics) {
      if (f.hcas.length === 0) {
        reject('fabric-without-hcas', `is on fabric ${f.name} but has no active adapter on it`, n.id, f.name);
        continue;
      }
      const pool = pools.get(f.name) ?? { linkLayer: f.linkLayer, members: [] };
      pools.set(f.name, pool);
      pool.members.push({ node: n, free, hcas: f.hcas });
    }
  }
  if (!nodes.some((n) => n.fabrics.length > 0)) {
    reject('no-fabric', `needs ${p.nodes} nodes on one fabric, and no node reports a fabric`);
    return null;
  }
  for (const name of [...pools.keys()].sort()) {
    const { linkLayer, members } = pools.get(name)!;
    const short = (why: string): void => reject('fabric-too-small', `needs ${p.nodes} nodes with ${perNode} free ${p.gpu_class} GPUs each; ${why}`, null, name);
    if (members.length < p.nodes) {
      short(`only ${members.length} qualif${members.length === 1 ? 'ies' : 'y'} (${members.map((m) => m.node.id).join(', ')})`);
      continue;
    }
    // The emptiest nodes: a replica spanning nodes is the least movable thing in the
    // cluster, so it gets the cleanest machines rather than the gaps.
    members.sort((a, b) => a.node.replicasOf(req.model) - b.node.replicasOf(req.model) || b.free.length - a.free.length);
    // Rank 0 opens the most ports: the first member that can hold them leads.
    let leader = -1;
    let leaderPorts: number[] = [];
    let leaderWhy = '';
    for (let i = 0; i < members.length && leader < 0; i++) {
      const got = portsFor(members[i]!.node, portNeeds(p.engine, p.launch_mode, p.nodes, 0), lo, hi);
      if (typeof got === 'string') leaderWhy ||= `${members[i]!.node.id} ${portReason(got, lo, hi)}`;
      else [leader, leaderPorts] = [i, got];
    }
    if (leader < 0) {
      short(`none can be rank 0: ${leaderWhy}`);
      continue;
    }
    const ranks = [leader];
    const ports = [leaderPorts];
    for (let i = 0; i < members.length && ranks.length < p.nodes; i++) {
      if (i === leader) continue;
      const m = members[i]!;
      const got = portsFor(m.node, portNeeds(p.engine, p.launch_mode, p.nodes, ranks.length), lo, hi);
      if (typeof got === 'string') {
        reject(got === FIXED ? 'fixed-port-taken' : 'no-free-port', portReason(got, lo, hi), m.node.id, name);
        continue;
      }
      ranks.push(i);
      ports.push(got);
    }
    if (ranks.length < p.nodes) {
      short(`only ${ranks.length} also have the ports each rank opens`);
      continue;
    }
    return formReplica(req, p, { gpuClass: p.gpu_class, fabric: { name, linkLayer }, members }, ranks, ports);
  }
  return null;
}

/**
 * Builds the decision from one pool: rank r is `pool.members[ranks[r]]`. Taking indices
 * into one pool, not members, is what leaves no way to form a replica across two.
 */
function formReplica(req: PlacementRequest, p: PlacementProfile, pool: Pool, ranks: readonly number[], ports: readonly number[][]): ReplicaPlacement {
  const perNode = (p.tp * p.pp) / p.nodes;
  const needs0 = portNeeds(p.engine, p.launch_mode, p.nodes, 0);
  const shards = ranks.map((at, rank): ShardPlacement => {
    const m = pool.members[at]!;
    const want = chooseGpus(m.free, perNode);
    const byIndex = new Map(m.free.map((g) => [g.index, g]));
    const gpus = want.map((i): ShardGpu => {
      const g = byIndex.get(i)!;
      return { index: i, class: pool.gpuClass, computeCapability: g.computeCapability! };
    });
    const needs = portNeeds(p.engine, p.launch_mode, p.nodes, rank);
    const held = ports[rank]!;
    return { node: m.node.id, address: m.node.address, rank, gpus, hcas: pool.fabric ? m.hcas : [], httpPort: needs.http ? held[0]! : null, ports: held };
  });
  return {
    replica: req.replica,
    model: req.model,
    profile: p.name,
    engine: p.engine,
    launchMode: p.nodes > 1 ? p.launch_mode : undefined,
    gpuClass: pool.gpuClass,
    fabric: pool.fabric,
    rendezvousPort: needs0.rendezvousBlock > 0 && p.nodes > 1 ? ports[0]![needs0.http ? 1 : 0]! : null,
    shards,
  };
}

const FIXED = 'fixed';
const RANGE = 'range';

/**
 * The ports a shard with these needs would hold on a node, lowest first: HTTP, then the
 * rendezvous block, then the fixed ones. A string says which kind ran out.
 */
function portsFor(n: NodeView, needs: PortNeeds, lo: number, hi: number): number[] | typeof FIXED | typeof RANGE {
  for (const f of needs.fixed) if (!n.portFree(f)) return FIXED;
  const out: number[] = [];
  const taken = (port: number): boolean => !n.portFree(port) || out.includes(port) || needs.fixed.includes(port);
  if (needs.http) {
    let port = lo;
    while (port <= hi && taken(port)) port++;
    if (port > hi) return RANGE;
    out.push(port);
  }
  if (needs.rendezvousBlock > 0) {
    let start = lo;
    search: for (; start + needs.rendezvousBlock - 1 <= hi; start++) {
      for (let k = 0; k < needs.rendezvousBlock; k++) {
        if (taken(start + k)) {
          start += k;
          continue search;
        }
      }
      break;
    }
    if (start + needs.rendezvousBlock - 1 > hi) return RANGE;
    for (let k = 0; k < needs.rendezvousBlock; k++) out.push(start + k);
  }
  out.push(...needs.fixed);
  return out;
}

function portReason(kind: typeof FIXED | typeof RANGE, lo: number, hi: number): string {
  return kind === FIXED
    ? "already runs a Ray head: Ray's dashboard (8265) and client (10001) ports are fixed, so a node holds one head"
    : `has no free ports left in the port range ${lo}-${hi} for what this engine opens; widen port_range or free a replica here`;
}

const NOT_READY = {
  cordoned: 'is cordoned: nothing new is placed here until `llmgw ctl uncordon`',
  unreachable: 'is unreachable: its agent stopped reporting; it takes replicas again once it reports',
  lost: 'is lost: its agent has been silent too long; restart the agent or remove the node',
} as const;

function classesOf(n: NodeView): string {
  const count = new Map<string, number>();
  for (const g of n.gpus) count.set(g.class ?? 'unclassified', (count.get(g.class ?? 'unclassified') ?? 0) + 1);
  return count.size === 0 ? 'it reports no GPUs' : `it has ${[...count].map(([c, k]) => `${k} × ${c}`).join(', ')}`;
}

/** The GPUs of the class that are not free, each with why: held, or its first problem. */
function whyNotFree(n: NodeView, gpuClass: string): string {
  const why: string[] = [];
  for (const g of n.gpus) {
    if (g.class !== gpuClass) continue;
    const holder = n.holderOf(g.index);
    if (holder !== null) why.push(`GPU ${g.index} held by ${holder}`);
    else if (g.problems.length > 0) why.push(`GPU ${g.index}: ${g.problems[0]!}`);
    else if (g.computeCapability === null) why.push(`GPU ${g.index} reports no compute capability`);
  }
  return why.length === 0 ? '' : ` (${why.join('; ')})`;
}
