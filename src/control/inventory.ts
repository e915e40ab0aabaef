// The control plane's inventory: the nodes agents registered, and which GPUs and ports
// the shards of each replica hold. Rebuilt from what agents report, never persisted: the
// cluster is the truth. Placement reads it through NodeView; only this class writes it.
import { LlmgwError } from '../errors.js';
import type { FleetFabric, FleetGpu, NodeRegistration } from '../messages/fleet.js';
import type { ReplicaPlacement } from './placement.js';

/**
 * `cordoned`: an operator keeps new replicas off; what runs stays. `unreachable`: the
 * agent stopped reporting, maybe briefly. `lost`: silent long enough that its replicas
 * are dead. A cordoned node that goes silent reads as unreachable/lost, and is cordoned
 * again when it comes back: the cordon is the operator's, reachability the agent's.
 */
export type NodeState = 'ready' | 'cordoned' | 'unreachable' | 'lost';

/** What placement may read of a node. */
export interface NodeView {
  readonly id: string;
  readonly address: string;
  readonly state: NodeState;
  readonly gpus: readonly FleetGpu[];
  readonly fabrics: readonly FleetFabric[];
  /** The replica holding this GPU, or null when no shard holds it. */
  holderOf(gpu: number): string | null;
  portFree(port: number): boolean;
  /** How many replicas of this model have a shard here. */
  replicasOf(model: string): number;
}

/** One shard's hold on a node. */
export interface ShardAllocation {
  readonly replica: string;
  readonly model: string;
  readonly rank: number;
  readonly gpus: readonly number[];
  readonly ports: readonly number[];
}

class NodeRecord implements NodeView {
  cordoned = false;
  reach: 'ready' | 'unreachable' | 'lost' = 'ready';
  readonly gpuHolder = new Map<number, string>();
  readonly portHolder = new Map<number, string>();
  readonly shards = new Map<string, ShardAllocation>();
  readonly models = new Map<string, number>();

  constructor(public hw: NodeRegistration) {}

  get id(): string {
    return this.hw.id;
  }
  get address(): string {
    return this.hw.address;
  }
  get gpus(): readonly FleetGpu[] {
    return this.hw.gpus;
  }
  get fabrics(): readonly FleetFabric[] {
    return this.hw.fabrics;
  }
  get state(): NodeState {
    if (this.reach !== 'ready') return this.reach;
    return this.cordoned ? 'cordoned' : 'ready';
  }
  holderOf(gpu: number): string | null {
    return this.gpuHolder.get(gpu) ?? null;
  }
  portFree(port: number): boolean {
    return !this.portHolder.has(port);
  }
  replicasOf(model: string): number {
    return this.models.get(model) ?? 0;
  }
}

export class Inventory {
  readonly #nodes = new Map<string, NodeRecord>();
  #sorted: NodeRecord[] | null = null;
  /** Replica → the nodes its shards are on. */
  readonly #replicas = new Map<string, string[]>();

  /**
   * An agent (re)registers: its hardware replaces what was known and the node is
   * reachable again. A cordon survives: it is usually there because something is wrong
   * with the node, and a reconnecting agent cannot know that. Allocations survive too:
   * the engines kept running while the agent was away.
   */
  register(reg: NodeRegistration): void {
    checkRegistration(reg);
    const prev = this.#nodes.get(reg.id);
    if (prev) {
      prev.hw = reg;
      prev.reach = 'ready';
      return;
    }
    this.#nodes.set(reg.id, new NodeRecord(reg));
    this.#sorted = null;
  }

  /** A heartbeat: an unreachable or lost node is reachable again; a cordon stays. */
  seen(id: string): void {
    this.#node(id).reach = 'ready';
  }

  unreachable(id: string): void {
    const n = this.#node(id);
    if (n.reach === 'ready') n.reach = 'unreachable';
  }

  lost(id: string): void {
    this.#node(id).reach = 'lost';
  }

  cordon(id: string): void {
    this.#node(id).cordoned = true;
  }

  uncordon(id: string): void {
    this.#node(id).cordoned = false;
  }

  node(id: string): NodeView | undefined {
    return this.#nodes.get(id);
  }

  /** Every node, by id: placement's tie-breaks are deterministic on this order. */
  nodes(): readonly NodeView[] {
    this.#sorted ??= [...this.#nodes.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    return this.#sorted;
  }

  /** The shards a node holds, by replica. */
  allocations(id: string): readonly ShardAllocation[] {
    return [...this.#node(id).shards.values()];
  }

  /**
   * Records a placement's holds, all or nothing. Placement decided on a view that may
   * have changed since (another replica committed first, a GPU reported a fault), so
   * every GPU and port is checked again here.
   */
  allocate(p: ReplicaPlacement): void {
    const conflict = (what: string): never => {
      throw new LlmgwError('LLMGW_PLACEMENT_CONFLICT', `replica ${p.replica} of ${p.model}: ${what}; place it again`, { replica: p.replica });
    };
    if (this.#replicas.has(p.replica)) conflict('the replica id already holds resources');
    const records: NodeRecord[] = [];
    for (const s of p.shards) {
      const n = this.#nodes.get(s.node) ?? conflict(`node ${s.node} is not in the inventory`);
      if (records.includes(n)) conflict(`two shards on node ${s.node}`);
      records.push(n);
      for (const g of s.gpus) {
        const gpu = n.gpus.find((x) => x.index === g.index) ?? conflict(`node ${s.node} has no GPU ${g.index}`);
        const holder = n.holderOf(g.index);
        if (holder !== null) conflict(`GPU ${g.index} on ${s.node} is held by replica ${holder}`);
        if (gpu.problems.length > 0) conflict(`GPU ${g.index} on ${s.node} has a problem: ${gpu.problems.join('; ')}`);
        if (gpu.class !== g.class) conflict(`GPU ${g.index} on ${s.node} is ${gpu.class ?? 'unclassified'}, not ${g.class}`);
      }
      if (new Set(s.ports).size !== s.ports.length) conflict(`a port is listed twice for ${s.node}`);
      for (const port of s.ports) if (!n.portFree(port)) conflict(`port ${port} on ${s.node} is held by replica ${n.portHolder.get(port)!}`);
    }
    p.shards.forEach((s, i) => {
      const n = records[i]!;
      const alloc: ShardAllocation = { replica: p.replica, model: p.model, rank: s.rank, gpus: s.gpus.map((g) => g.index), ports: s.ports };
      n.shards.set(p.replica, alloc);
      for (const g of alloc.gpus) n.gpuHolder.set(g, p.replica);
      for (const port of alloc.ports) n.portHolder.set(port, p.replica);
      n.models.set(p.model, n.replicasOf(p.model) + 1);
    });
    this.#replicas.set(p.replica, records.map((n) => n.id));
  }

  /**
   * Frees every shard of a replica at once. Replicas fail whole (one dead shard leaves
   * the others waiting on collectives that never complete), so there is no per-shard
   * release to get wrong. False when the replica held nothing.
   */
  release(replica: string): boolean {
    const where = this.#replicas.get(replica);
    if (!where) return false;
    for (const id of where) {
      const n = this.#nodes.get(id)!;
      const alloc = n.shards.get(replica)!;
      n.shards.delete(replica);
      for (const g of alloc.gpus) n.gpuHolder.delete(g);
      for (const port of alloc.ports) n.portHolder.delete(port);
      const left = n.replicasOf(alloc.model) - 1;
      if (left > 0) n.models.set(alloc.model, left);
      else n.models.delete(alloc.model);
    }
    this.#replicas.delete(replica);
    return true;
  }

  #node(id: string): NodeRecord {
    const n = this.#nodes.get(id);
    if (!n) throw new LlmgwError('LLMGW_NODE_UNKNOWN', `no node '${id}' has registered`, { node: id });
    return n;
  }
}

/** A registration with one GPU index or fabric twice cannot be placed on unambiguously. */
function checkRegistration(reg: NodeRegistration): void {
  const bad = (what: string): never => {
    throw new LlmgwError('LLMGW_REGISTRATION_INVALID', `node ${reg.id}: ${what}`, { node: reg.id });
  };
  const indices = new Set<number>();
  for (const g of reg.gpus) {
    if (indices.has(g.index)) bad(`GPU index ${g.index} is reported twice`);
    indices.add(g.index);
  }
  const fabrics = new Set<string>();
  for (const f of reg.fabrics) {
    if (fabrics.has(f.name)) bad(`fabric ${f.name} is reported twice`);
    fabrics.add(f.name);
  }
}
