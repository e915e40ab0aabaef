// A fleet of agents played in memory for the reconciler's specs: they obey commands at
// once and report as the real agent does (a start becomes starting, then ready), on a
// synthetic clock. The fleet end-to-end specs (spec/fleet) run real agents.
import type { ShardState, ShardStatus } from '../../src/messages/agent.js';
import type { PlacedModel, PlacedProfile } from '../../src/messages/catalog.js';
import { Reconciler, type Dispatch, type NodeReport, type ReconcilerOptions } from '../../src/control/reconciler.js';
import { fabric, gpus } from './cluster.js';

export const OPTS: ReconcilerOptions = {
  portRange: [30000, 30099],
  unreachableAfterMs: 10_000,
  lostAfterMs: 30_000,
  drainGraceMs: 60_000,
  settleMs: 5_000,
  resendMs: 3_000,
  backoff: { baseMs: 1_000, maxMs: 8_000 },
  random: () => 0.5,
};

export function prof(over: Partial<PlacedProfile> = {}): PlacedProfile {
  return { name: 'h100-tp1', engine: 'vllm', gpu_class: 'h100-80g', tp: 1, pp: 1, nodes: 1, gpus_per_node: 1, args: [], env: {}, priority: 0, weight: 1, startup_timeout_ms: 600_000, ...over };
}

export function model(name: string, min: number, profiles: PlacedProfile[] = [prof()], max = Math.max(min, 4)): PlacedModel {
  return { name, source: `/models/${name}`, scaling: { min, max }, profiles };
}

export function report(id: string, n = 8, fabrics: ReturnType<typeof fabric>[] = []): NodeReport {
  return { id, address: `10.0.0.${id.replace(/\D/g, '') || '1'}`, hostname: id, agentVersion: 'test', engineVersions: {}, mgmtInterface: 'eth0', gpus: gpus('h100-80g', n, 8), fabrics };
}

/** Agents that do what they are told: a start becomes `starting` at once, `ready` when the spec says so. */
export class Fleet {
  now = 0;
  rec: Reconciler;
  readonly running = new Map<string, Map<string, ShardStatus>>();
  readonly sent: Dispatch[] = [];
  /** Published endpoint ids, as the router would hold them. */
  endpoints: string[] = [];
  autoReady = true;
  autoApply = true;

  constructor(models: PlacedModel[], opts: Partial<ReconcilerOptions> = {}) {
    this.rec = new Reconciler({ ...OPTS, ...opts }, models);
  }

  join(id: string, n = 8, fabrics: ReturnType<typeof fabric>[] = []): void {
    if (!this.running.has(id)) this.running.set(id, new Map());
    this.rec.register(report(id, n, fabrics), [...this.running.get(id)!.values()], this.now);
    this.flush();
  }

  status(node: string, id: string, state: ShardState, reason: string | null = null): void {
    const prev = this.running.get(node)!.get(id)!;
    const st = { ...prev, state, reason, since: this.now };
    if (state === 'stopped') this.running.get(node)!.delete(id);
    else this.running.get(node)!.set(id, st);
    this.rec.shardStatus(node, st, this.now);
    this.flush();
  }

  /** Advances the clock in steps, heartbeating every node but `silent`. */
  advance(ms: number, silent: readonly string[] = []): void {
    const end = this.now + ms;
    while (this.now < end) {
      this.now = Math.min(end, this.now + 1_000);
      for (const id of this.running.keys()) if (!silent.includes(id)) this.rec.heartbeat(id, this.now);
      this.rec.tick(this.now);
      this.flush(silent);
    }
  }

  flush(silent: readonly string[] = []): void {
    for (let again = true; again; ) {
      again = false;
      for (const d of this.rec.dispatches(this.now)) {
        this.sent.push(d);
        if (silent.includes(d.node)) continue;
        const shards = this.running.get(d.node)!;
        const c = d.command;
        if (c.kind === 'start') {
          if (shards.has(c.shard)) continue;
          const st: ShardStatus = { id: c.shard, spec: c.spec, state: 'starting', since: this.now, reason: null, tail: null, adopted: false, processes: [] };
          shards.set(c.shard, st);
          this.rec.shardStatus(d.node, st, this.now);
          if (this.autoReady) this.status(d.node, c.shard, 'ready');
        } else if (shards.has(c.shard)) {
          this.status(d.node, c.shard, 'stopped');
        } else {
          this.rec.shardStatus(d.node, { id: c.shard, spec: null, state: 'stopped', since: this.now, reason: null, tail: null, adopted: false, processes: [] }, this.now);
        }
        again = true;
      }
      const pub = this.rec.publication();
      if (pub) {
        this.endpoints = pub.endpoints.map((e) => e.id).sort();
        if (this.autoApply) this.rec.routerApplied(pub.version);
        again = true;
      }
    }
  }

  replicas(state?: string) {
    return [...this.rec.replicas()].filter((r) => state === undefined || r.state === state);
  }

  commands(kind: string) {
    return this.sent.filter((d) => d.command.kind === kind);
  }
}

