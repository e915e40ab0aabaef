// The reconciler: desired replicas (the catalog) against actual ones (what agents
// report), one decision at a time. Pure: events and the clock come in as calls, and
// what to send to agents and to the router comes out of `dispatches` and
// `publication`; the control actor (src/actors/control) moves them. Nothing is
// persisted: after a restart every replica is rebuilt from the agents' Registers.
//
// The rules, and the failure each one prevents:
// - One placement per pass: placement reads allocations, so two from one snapshot
//   could be handed the same GPUs.
// - A shard failing fails its whole replica (the other ranks would wait on collectives
//   forever, holding GPUs); the rebuild backs off exponentially, with jitter, carried on
//   the model so that tearing the replica down does not reset it.
// - Node expiry has two stages: `unreachable` changes nothing (engines serve without
//   their agent, and a blip must not cost a 70B model's reload), `lost` fails its replicas.
// - Drain and scale-down go replacement first: the leaving replica serves until one to
//   replace it is ready (bounded by the drain grace period), then the router stops
//   sending it requests, and only once the router says so is it told to drain.
// - No placement until agents have had `settleMs` to report, counted from the first
//   Register: a control plane that placed at once would duplicate every replica it had
//   not heard of yet, and would pile a cold-started fleet's replicas on its first node.
// - GPUs are freed only when their shards are known to be stopped, or their node lost.
import { LlmgwError } from '../errors.js';
import type { ShardState, ShardStatus } from '../messages/agent.js';
import type { PlacedModel, PlacedProfile } from '../messages/catalog.js';
import type { ReplicaState } from '../messages/control.js';
import type { PlacedEndpoint } from '../messages/endpoints.js';
import type { NodeRegistration } from '../messages/fleet.js';
import type { ShardSpec } from '../messages/shard-spec.js';
import { portNeeds } from './engine-ports.js';
import { Inventory } from './inventory.js';
import { placeReplica, type PlacementResult, type ReplicaPlacement } from './placement.js';
import { ACTIVE, endpointOf, replicaId, shardId, shardSpecs, type ReplicaRecord, type ShardRecord } from './replica.js';

export interface ReconcilerOptions {
  readonly portRange: readonly [number, number];
  readonly unreachableAfterMs: number;
  readonly lostAfterMs: number;
  /** How long a drain waits for a replacement to serve, and a draining shard to stop. */
  readonly drainGraceMs: number;
  /** From the first agent's Register, how long placement waits for the others to report. */
  readonly settleMs: number;
  /** Nodes alive before a restart (the roster): once all have reported, the settle period ends early. */
  readonly expectedNodes?: readonly string[];
  /** A command the agent's reports do not yet reflect is sent again after this long. */
  readonly resendMs: number;
  /** Rebuilds after failures wait a jittered [0, min(max, base·2^(n-1))). */
  readonly backoff: { readonly baseMs: number; readonly maxMs: number };
  readonly random: () => number;
  /** Each decision and transition worth a log line: what happened, and to what. */
  readonly onEvent?: (event: string, fields: Readonly<Record<string, unknown>>) => void;
}

/** What an agent registers beyond its hardware. */
export interface NodeReport extends NodeRegistration {
  readonly hostname: string;
  readonly agentVersion: string;
  readonly engineVersions: Readonly<Record<string, string>>;
  readonly mgmtInterface: string;
}

export type AgentCommand = { readonly kind: 'start'; readonly shard: string; readonly spec: ShardSpec } | { readonly kind: 'stop' | 'drain'; readonly shard: string; readonly graceMs: number };

export interface Dispatch {
  readonly node: string;
  readonly command: AgentCommand;
}

export interface NodeMeta {
  lastSeen: number;
  connected: boolean;
  /** Set by `drain`: its replicas move off, replacement first. */
  drainingSince: number | null;
  report: NodeReport;
}

/** A shard an agent runs that no replica claims: stopped, its GPUs not handed out meanwhile if it can be described. */
interface Orphan {
  readonly node: string;
  readonly reason: string;
  sentAt: number | null;
}

const FINISHED: ReadonlySet<ShardState | 'unknown'> = new Set(['stopped', 'failed']);

export class Reconciler {
  readonly inventory = new Inventory();
  readonly #opts: ReconcilerOptions;
  #models: Map<string, PlacedModel>;
  readonly #replicas = new Map<string, ReplicaRecord>();
  readonly #byShard = new Map<string, ReplicaRecord>();
  readonly #nodes = new Map<string, NodeMeta>();
  readonly #orphans = new Map<string, Orphan>();
  /** Per model: failures in a row and when the next placement may be tried. */
  readonly #backoff = new Map<string, { failures: number; notBefore: number }>();
  /** Per model: the last placement attempt, for `explain` and `models`. */
  readonly #lastAttempt = new Map<string, PlacementResult>();
  #published = '';
  #version = 0;
  #applied = 0;
  #seq = 0;
  #settled = false;
  /** When the first agent registered: the settle period runs from there, so a fleet started after its server still gets to report. */
  #firstRegister: number | null = null;
  #rosterDirty = false;

  constructor(opts: ReconcilerOptions, models: readonly PlacedModel[]) {
    this.#opts = opts;
    this.#models = new Map(models.map((m) => [m.name, m]));
  }

  // ---- agent events ----

  /**
   * A (re)connected agent: its hardware, and every shard it runs. Shards this control
   * plane holds are matched by id; the rest are adopted into replicas when the catalog
   * still wants them, and stopped otherwise.
   */
  register(report: NodeReport, running: readonly ShardStatus[], now: number): void {
    const wasLost = this.inventory.node(report.id)?.state === 'lost';
    this.inventory.register(report);
    this.#firstRegister ??= now;
    const meta = this.#nodes.get(report.id);
    if (!meta || wasLost) this.#rosterDirty = true;
    if (meta) {
      meta.lastSeen = now;
      meta.connected = true;
      meta.report = report;
      if (meta.drainingSince !== null) this.inventory.cordon(report.id);
    } else {
      this.#nodes.set(report.id, { lastSeen: now, connected: true, drainingSince: null, report });
    }
    const reported = new Map(running.map((s) => [s.id, s]));
    for (const r of [...this.#replicas.values()]) {
      for (const s of r.shards) {
        if (!s || s.node !== report.id || s.gone) continue;
        const st = reported.get(s.id);
        if (st) {
          reported.delete(s.id);
          this.#apply(r, s, st, now);
        } else if (s.want !== 'run') {
          s.state = 'stopped';
        } else if (s.state === 'unknown') {
          s.sentAt = null; // never acknowledged: the start was lost, send it again
        } else {
          this.#fail(r, `shard ${s.id} is no longer running on ${s.node} (its engine exited while the agent was away)`, now);
        }
      }
    }
    for (const [id, o] of this.#orphans) if (o.node === report.id && !reported.has(id)) this.#orphans.delete(id);
    for (const st of reported.values()) this.#adopt(report.id, st, now);
    this.#sweep();
  }

  heartbeat(node: string, now: number): void {
    const meta = this.#nodes.get(node);
    if (!meta) return;
    meta.lastSeen = now;
    this.inventory.seen(node);
  }

  /** The stream ended: commands wait for the next Register; expiry judges the silence. */
  disconnected(node: string): void {
    const meta = this.#nodes.get(node);
    if (meta) meta.connected = false;
  }

  shardStatus(node: string, st: ShardStatus, now: number): void {
    this.heartbeat(node, now);
    const r = this.#byShard.get(st.id);
    const s = r?.shards.find((x) => x?.id === st.id);
    if (r && s && s.node === node) this.#apply(r, s, st, now);
    else if (this.#orphans.has(st.id)) {
      if (FINISHED.has(st.state)) this.#orphans.delete(st.id);
    } else if (!FINISHED.has(st.state)) this.#adopt(node, st, now);
    this.#sweep();
  }

  // ---- operator ----

  cordon(node: string): void {
    this.#meta(node);
    this.inventory.cordon(node);
  }

  uncordon(node: string): void {
    this.#meta(node).drainingSince = null;
    this.inventory.uncordon(node);
  }

  /** Cordons the node and moves its replicas off, each after its replacement serves. */
  drain(node: string, now: number): void {
    const meta = this.#meta(node);
    this.inventory.cordon(node);
    meta.drainingSince ??= now;
  }

  /** A reloaded catalog. A model gone (or scaled down) is retired by the next ticks, replacement rules as ever. */
  setCatalog(models: readonly PlacedModel[]): { added: string[]; removed: string[]; changed: string[] } {
    const next = new Map(models.map((m) => [m.name, m]));
    const added = [...next.keys()].filter((n) => !this.#models.has(n));
    const removed = [...this.#models.keys()].filter((n) => !next.has(n));
    const changed = [...next.keys()].filter((n) => this.#models.has(n) && JSON.stringify(next.get(n)) !== JSON.stringify(this.#models.get(n)));
    this.#models = next;
    for (const n of [...added, ...changed]) this.#backoff.delete(n);
    return { added, removed, changed };
  }

  // ---- the loop ----

  /** One pass: expiry, timeouts, retirements, then at most one placement. */
  tick(now: number): void {
    this.#expire(now);
    this.#timeouts(now);
    this.#sweep();
    this.#retire(now);
    if (!this.#settledAt(now)) return;
    if (!this.#settled) {
      this.#settled = true;
      this.#event('settle period over: placing replicas', { nodes: this.#nodes.size, replicas: this.#replicas.size });
    }
    this.#placeOne(now);
  }

  /**
   * Commands to send now, each marked sent: a start not yet acknowledged, a stop or a
   * drain not yet reflected in the agent's reports, after `resendMs` again. Rank 0
   * starts first (it hosts the rendezvous every other rank dials); a drain waits until
   * the router no longer routes to the replica.
   */
  dispatches(now: number): Dispatch[] {
    const out: Dispatch[] = [];
    const due = (sentAt: number | null): boolean => sentAt === null || now - sentAt >= this.#opts.resendMs;
    const grace = this.#opts.drainGraceMs;
    for (const r of this.#replicas.values()) {
      const leaderStarted = r.shards[0] !== undefined && r.shards[0].state !== 'unknown';
      for (const s of r.shards) {
        if (!s || s.gone || !this.#nodes.get(s.node)?.connected || !due(s.sentAt)) continue;
        let command: AgentCommand | null = null;
        if (s.want === 'run') {
          if (s.state === 'unknown' && (s.rank === 0 || leaderStarted)) command = { kind: 'start', shard: s.id, spec: s.spec };
        } else if (!FINISHED.has(s.state)) {
          if (s.want === 'stop') command = { kind: 'stop', shard: s.id, graceMs: grace };
          else if (s.state !== 'draining' && r.unpublishedIn !== null && this.#applied >= r.unpublishedIn) command = { kind: 'drain', shard: s.id, graceMs: grace };
        }
        if (command) {
          s.sentAt = now;
          out.push({ node: s.node, command });
        }
      }
    }
    for (const [id, o] of this.#orphans) {
      if (!this.#nodes.get(o.node)?.connected || !due(o.sentAt)) continue;
      o.sentAt = now;
      out.push({ node: o.node, command: { kind: 'stop', shard: id, graceMs: grace } });
    }
    return out;
  }

  /**
   * The router's next endpoint set when it changed since the last call, else null.
   * A replica leaving it is marked with the version, so its drain waits for that
   * version to be applied (`routerApplied`).
   */
  publication(): { version: number; endpoints: PlacedEndpoint[] } | null {
    const ready = [...this.#replicas.values()].filter((r) => r.state === 'ready');
    const key = ready.map((r) => `${r.id}@${r.endpoint.url}`).sort().join(',');
    const mark = (): void => {
      for (const r of this.#replicas.values()) if (r.state === 'draining' && r.unpublishedIn === null) r.unpublishedIn = this.#version;
    };
    if (key === this.#published) {
      mark();
      return null;
    }
    this.#published = key;
    this.#version++;
    mark();
    return { version: this.#version, endpoints: ready.map((r) => ({ ...r.endpoint, models: [...r.endpoint.models] })) };
  }

  /** The last publication did not reach the router: the next call publishes again. */
  forgetPublication(): void {
    this.#published = '';
  }

  /** The router applied endpoint set `version`. */
  routerApplied(version: number): void {
    this.#applied = Math.max(this.#applied, version);
  }

  // ---- reads ----

  get models(): ReadonlyMap<string, PlacedModel> {
    return this.#models;
  }

  replicas(): Iterable<ReplicaRecord> {
    return this.#replicas.values();
  }

  nodeMeta(node: string): NodeMeta | undefined {
    return this.#nodes.get(node);
  }

  nodeIds(): Iterable<string> {
    return this.#nodes.keys();
  }

  backoffOf(model: string): { failures: number; notBefore: number } | undefined {
    return this.#backoff.get(model);
  }

  lastAttempt(model: string): PlacementResult | undefined {
    return this.#lastAttempt.get(model);
  }

  /** Where a replica of `model` would go now, without placing it. */
  explain(model: string): PlacementResult {
    const m = this.#models.get(model);
    if (!m) throw new LlmgwError('LLMGW_MODEL_NOT_FOUND', `'${model}' is not a placed model (it has no profiles in the catalog)`);
    return placeReplica(this.inventory.nodes(), { model, replica: replicaId(model, 'explain'), profiles: m.profiles, portRange: this.#opts.portRange });
  }

  /** Desired replicas of a model now: its scaling minimum; 0 once it left the catalog. */
  desired(model: string): number {
    return this.#models.get(model)?.scaling.min ?? 0;
  }

  // ---- internals ----

  /**
   * Whether placement may run: agents have had the settle period since the first Register,
   * or every node of the roster has reported (then waiting longer would learn nothing).
   */
  #settledAt(now: number): boolean {
    if (this.#firstRegister === null) return false;
    if (now - this.#firstRegister >= this.#opts.settleMs) return true;
    const expected = this.#opts.expectedNodes ?? [];
    return expected.length > 0 && expected.every((n) => this.#nodes.has(n));
  }

  /** The roster's nodes (registered, not lost) when they changed since the last call, else null. */
  rosterChange(): string[] | null {
    if (!this.#rosterDirty) return null;
    this.#rosterDirty = false;
    return [...this.#nodes.keys()].filter((n) => this.inventory.node(n)?.state !== 'lost');
  }

  #event(event: string, fields: Readonly<Record<string, unknown>>): void {
    this.#opts.onEvent?.(event, fields);
  }

  #meta(node: string): NodeMeta {
    const m = this.#nodes.get(node);
    if (!m) throw new LlmgwError('LLMGW_NODE_UNKNOWN', `no node '${node}' has registered`, { node });
    return m;
  }

  /** One report about a shard this control plane holds. */
  #apply(r: ReplicaRecord, s: ShardRecord, st: ShardStatus, now: number): void {
    s.state = st.state;
    s.reason = st.reason;
    if (s.want !== 'run') return;
    if (st.state === 'failed' || st.state === 'stopped') {
      const tail = st.tail && st.tail.length > 0 ? ` (last output: ${st.tail.slice(-3).join(' | ')})` : '';
      this.#fail(r, `shard ${s.id} on ${s.node} ${st.state === 'failed' ? `failed: ${st.reason ?? 'no reason given'}` : 'stopped unasked'}${tail}`, now);
      return;
    }
    if (r.state === 'pending') this.#set(r, 'starting', null, now);
    if (r.state === 'starting' && r.shards.every((x) => x?.state === 'ready')) {
      this.#set(r, 'ready', null, now);
      this.#backoff.delete(r.model);
    }
  }

  /** Takes over a shard no replica here claims, or stops it. */
  #adopt(node: string, st: ShardStatus, now: number): void {
    if (FINISHED.has(st.state)) return;
    const spec = st.spec;
    if (!spec) return this.#orphan(st.id, node, 'its spec could not be read, so nothing can claim it');
    const held = this.#replicas.get(spec.replica);
    if (held) {
      if (!held.recovered || held.shards[spec.rank] !== undefined || spec.ranks !== held.ranks || !ACTIVE.has(held.state)) {
        return this.#orphan(st.id, node, `replica ${spec.replica} already has a rank ${spec.rank}`);
      }
      const placement = withShard(held.placement, shardPlacementOf(node, this.inventory.node(node)?.address ?? spec.nodeIp ?? '', spec));
      this.inventory.release(held.id);
      try {
        this.inventory.allocate(placement);
      } catch (err) {
        this.inventory.allocate(held.placement);
        return this.#orphan(st.id, node, LlmgwError.from(err).message);
      }
      held.placement = placement;
      this.#addShard(held, node, st);
      this.#apply(held, held.shards[spec.rank]!, st, now);
      return;
    }
    const model = this.#models.get(spec.servedName);
    const profile = model?.profiles.find((p) => p.engine === spec.engine && p.tp === spec.tp && p.pp === spec.pp && p.nodes === spec.ranks && p.gpu_class === spec.gpus[0]?.class);
    let leaving: string | null = null;
    if (!model || !profile) leaving = `its model ${spec.servedName} or a profile matching it is no longer in the catalog`;
    else if (this.#staying(model.name).length >= model.scaling.max) leaving = `${model.name} already has its maximum of ${model.scaling.max} replicas`;
    const placement: ReplicaPlacement = {
      replica: spec.replica,
      model: spec.servedName,
      profile: profile?.name ?? '(unknown)',
      engine: spec.engine,
      launchMode: spec.launchMode,
      gpuClass: spec.gpus[0]?.class ?? '',
      fabric: spec.transport?.kind === 'fabric' ? { name: spec.transport.fabric, linkLayer: spec.transport.linkLayer } : null,
      rendezvousPort: spec.rank === 0 ? (spec.leader?.port ?? null) : null,
      shards: [shardPlacementOf(node, this.inventory.node(node)?.address ?? '', spec)],
    };
    try {
      this.inventory.allocate(placement);
    } catch (err) {
      return this.#orphan(st.id, node, LlmgwError.from(err).message);
    }
    const r: ReplicaRecord = {
      id: spec.replica,
      model: spec.servedName,
      profile: placement.profile,
      placement,
      shards: new Array<ShardRecord | undefined>(spec.ranks).fill(undefined),
      ranks: spec.ranks,
      state: 'starting',
      reason: spec.ranks > 1 ? 'recovered from its agents: waiting for every rank to report' : 'recovered from its agent',
      since: now,
      createdAt: now,
      recovered: true,
      endpoint: endpointOf(model ?? { name: spec.servedName, source: spec.model, scaling: { min: 0, max: 0 }, profiles: [] }, profile, spec, spec.replica),
      leaving: null,
      unpublishedIn: null,
    };
    this.#replicas.set(r.id, r);
    this.#addShard(r, node, st);
    this.#event('replica recovered from an agent report', { replica: r.id, model: r.model, node, rank: spec.rank, ...(leaving && { leaving }) });
    if (leaving) {
      // Held until stopped, so that its GPUs are not handed out while it still runs.
      r.leaving = leaving;
      this.#set(r, 'stopping', leaving, now);
      for (const s of r.shards) if (s) s.want = 'stop';
      return;
    }
    this.#apply(r, r.shards[spec.rank]!, st, now);
  }

  #addShard(r: ReplicaRecord, node: string, st: ShardStatus): void {
    const spec = st.spec!;
    const s: ShardRecord = { id: st.id, node, rank: spec.rank, spec, state: st.state, reason: st.reason, want: 'run', sentAt: null, gone: false };
    r.shards[spec.rank] = s;
    this.#byShard.set(s.id, r);
  }

  #orphan(id: string, node: string, reason: string): void {
    if (this.#orphans.has(id)) return;
    this.#orphans.set(id, { node, reason, sentAt: null });
    this.#event('stopping a shard nothing claims', { shard: id, node, reason });
  }

  #set(r: ReplicaRecord, state: ReplicaState, reason: string | null, now: number): void {
    if (r.state !== state) {
      r.since = now;
      this.#event(`replica ${state}`, { replica: r.id, model: r.model, from: r.state, ...(reason !== null && { reason }) });
    }
    if (state === 'draining') r.unpublishedIn = null;
    r.state = state;
    r.reason = reason;
  }

  /** Fails the whole replica: every shard is stopped, and the model's rebuild backs off. */
  #fail(r: ReplicaRecord, reason: string, now: number): void {
    if (r.state === 'failed' || r.state === 'stopping') return;
    const wasLeaving = r.leaving !== null;
    this.#set(r, 'failed', reason, now);
    for (const s of r.shards) {
      if (!s || s.want === 'stop') continue;
      s.want = 'stop';
      s.sentAt = null;
    }
    if (wasLeaving) return; // it was going anyway: no reason to slow its replacement
    const b = this.#backoff.get(r.model) ?? { failures: 0, notBefore: 0 };
    b.failures++;
    const bound = Math.min(this.#opts.backoff.maxMs, this.#opts.backoff.baseMs * 2 ** (b.failures - 1));
    b.notBefore = now + Math.floor(this.#opts.random() * bound);
    this.#backoff.set(r.model, b);
  }

  #expire(now: number): void {
    for (const [id, meta] of this.#nodes) {
      const silent = now - meta.lastSeen;
      const state = this.inventory.node(id)!.state;
      if (silent >= this.#opts.lostAfterMs) {
        if (state === 'lost') continue;
        this.inventory.lost(id);
        this.#rosterDirty = true;
        this.#event('node lost', { node: id, silentMs: silent });
        for (const r of this.#replicas.values()) {
          if (!r.shards.some((s) => s?.node === id)) continue;
          for (const s of r.shards) if (s?.node === id) s.gone = true;
          this.#fail(r, `node ${id} is lost: no word from its agent for ${Math.round(silent / 1000)} s`, now);
        }
        for (const [sid, o] of this.#orphans) if (o.node === id) this.#orphans.delete(sid);
      } else if (silent >= this.#opts.unreachableAfterMs && state !== 'unreachable') {
        this.inventory.unreachable(id);
        this.#event('node unreachable', { node: id, silentMs: silent });
      }
    }
  }

  #timeouts(now: number): void {
    for (const r of this.#replicas.values()) {
      if (r.state === 'pending' || r.state === 'starting') {
        const limit = this.#models.get(r.model)?.profiles.find((p) => p.name === r.profile)?.startup_timeout_ms;
        if (limit !== undefined && now - r.createdAt >= limit) {
          const waiting = r.shards.map((s, rank) => (s ? `${s.id} ${s.state}${s.reason ? ` (${s.reason})` : ''}` : `rank ${rank} unreported`)).join('; ');
          this.#fail(r, `not ready within its startup timeout of ${limit} ms: ${waiting}`, now);
        }
      } else if (r.state === 'draining' && now - r.since >= this.#opts.drainGraceMs * 2) {
        // The agent bounds a drain by its own grace period; one that overruns ours twice is stopped outright.
        this.#set(r, 'stopping', `drain did not finish within ${this.#opts.drainGraceMs * 2} ms`, now);
        for (const s of r.shards) if (s && s.want === 'drain') (s.want = 'stop'), (s.sentAt = null);
      }
    }
  }

  /** Forgets replicas whose every shard is stopped or lost, freeing their GPUs. */
  #sweep(): void {
    for (const r of [...this.#replicas.values()]) {
      if (r.state === 'ready' || r.state === 'starting' || r.state === 'pending') continue;
      if (!r.shards.every((s) => !s || s.gone || (s.want !== 'run' && FINISHED.has(s.state)))) continue;
      this.#replicas.delete(r.id);
      for (const s of r.shards) if (s) this.#byShard.delete(s.id);
      this.inventory.release(r.id);
    }
  }

  /** Replicas of a model that count toward its desired number and are not leaving. */
  #staying(model: string): ReplicaRecord[] {
    return [...this.#replicas.values()].filter((r) => r.model === model && ACTIVE.has(r.state) && r.leaving === null);
  }

  #retire(now: number): void {
    const models = new Set([...this.#replicas.values()].map((r) => r.model));
    for (const model of models) {
      const desired = this.desired(model);
      const active = [...this.#replicas.values()].filter((r) => r.model === model && ACTIVE.has(r.state));
      for (const r of active) {
        if (r.leaving !== null) continue;
        const draining = r.shards.find((s) => s && this.#nodes.get(s.node)?.drainingSince != null);
        if (!this.#models.has(model)) r.leaving = `${model} is no longer in the catalog`;
        else if (draining) r.leaving = `node ${draining.node} is draining`;
      }
      // Scale-down: the least useful first (not serving yet, then the youngest).
      const staying = active.filter((r) => r.leaving === null);
      const extra = staying.length - desired;
      if (extra > 0) {
        const order = [...staying].sort((a, b) => Number(a.state === 'ready') - Number(b.state === 'ready') || b.createdAt - a.createdAt);
        for (const r of order.slice(0, extra)) r.leaving = `scaled down to ${desired} replicas`;
      }
      const readyStaying = active.filter((r) => r.leaving === null && r.state === 'ready').length;
      for (const r of active) {
        if (r.leaving === null) continue;
        const drainSince = Math.min(...r.shards.map((s) => (s ? (this.#nodes.get(s.node)?.drainingSince ?? Infinity) : Infinity)));
        const overdue = Number.isFinite(drainSince) && now - drainSince >= this.#opts.drainGraceMs;
        // Its replacement must be serving through the router too, not only ready here.
        const replaced = readyStaying >= desired && this.#applied >= this.#version;
        if (r.state === 'ready' && !replaced && !overdue) {
          r.reason = `${r.leaving}: serving until a replacement is ready`;
          continue;
        }
        this.#stopReplica(r, r.leaving, now);
      }
    }
  }

  /** A ready replica drains (the router first stops sending it requests); any other stops. */
  #stopReplica(r: ReplicaRecord, reason: string, now: number): void {
    const draining = r.state === 'ready';
    this.#set(r, draining ? 'draining' : 'stopping', reason, now);
    for (const s of r.shards) {
      if (!s) continue;
      s.want = draining ? 'drain' : 'stop';
      s.sentAt = null;
    }
  }

  #placeOne(now: number): void {
    for (const m of this.#models.values()) {
      if (this.#staying(m.name).length >= m.scaling.min) continue;
      const b = this.#backoff.get(m.name);
      if (b && now < b.notBefore) continue;
      const id = replicaId(m.name, `${now.toString(36)}${(this.#seq++).toString(36)}`);
      const result = placeReplica(this.inventory.nodes(), { model: m.name, replica: id, profiles: m.profiles, portRange: this.#opts.portRange });
      this.#lastAttempt.set(m.name, result);
      if (!result.placement) continue;
      this.inventory.allocate(result.placement);
      const profile = m.profiles.find((p) => p.name === result.placement!.profile)!;
      this.#create(m, profile, result.placement, now);
      return;
    }
  }

  #create(m: PlacedModel, profile: PlacedProfile, p: ReplicaPlacement, now: number): void {
    const specs = shardSpecs(m, profile, p, (node) => {
      const report = this.#nodes.get(node)?.report;
      return { mgmtInterface: report?.mgmtInterface ?? '', gpus: report?.gpus ?? [] };
    });
    const r: ReplicaRecord = {
      id: p.replica,
      model: m.name,
      profile: profile.name,
      placement: p,
      shards: p.shards.map((s, rank): ShardRecord => ({ id: shardId(p.replica, rank), node: s.node, rank, spec: specs[rank]!, state: 'unknown', reason: null, want: 'run', sentAt: null, gone: false })),
      ranks: p.shards.length,
      state: 'pending',
      reason: null,
      since: now,
      createdAt: now,
      recovered: false,
      endpoint: endpointOf(m, profile, specs[0]!, p.replica),
      leaving: null,
      unpublishedIn: null,
    };
    this.#replicas.set(r.id, r);
    for (const s of r.shards) this.#byShard.set(s!.id, r);
    this.#event('replica placed', { replica: r.id, model: m.name, profile: profile.name, nodes: p.shards.map((s) => s.node) });
  }
}

/** The hold a running shard has on its node, from its spec (ports as placement hands them out). */
function shardPlacementOf(node: string, address: string, spec: ShardSpec): ReplicaPlacement['shards'][number] {
  const needs = portNeeds(spec.engine, spec.launchMode, spec.ranks, spec.rank);
  const ports: number[] = [];
  if (needs.http) ports.push(spec.httpPort);
  if (spec.rank === 0 && spec.leader && needs.rendezvousBlock > 0) for (let i = 0; i < needs.rendezvousBlock; i++) ports.push(spec.leader.port + i);
  ports.push(...needs.fixed);
  return {
    node,
    address: address || spec.httpHost || '',
    rank: spec.rank,
    gpus: spec.gpus,
    hcas: spec.transport?.kind === 'fabric' ? spec.transport.hcas : [],
    httpPort: needs.http ? spec.httpPort : null,
    ports: [...new Set(ports)],
  };
}

function withShard(p: ReplicaPlacement, shard: ReplicaPlacement['shards'][number]): ReplicaPlacement {
  const shards = [...p.shards.filter((s) => s.rank !== shard.rank), shard].sort((a, b) => a.rank - b.rank);
  return { ...p, shards, rendezvousPort: p.rendezvousPort ?? null };
}
