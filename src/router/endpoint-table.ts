import { Pool } from 'undici';
import type { EndpointProbe, EngineSettings } from '../messages/endpoints.js';
import { EndpointHealth, type BreakerState, type HealthPolicy } from './endpoint-health.js';
import { InflightLog } from './inflight-log.js';
import { PrefillRate } from './admission/prefill-rate.js';
import { batchSlots, scrapeCouldTell } from './load-estimate.js';
import { largestStep } from './scrape/engine-load.js';
import type { EngineLoad } from '../messages/endpoints.js';

/** Down at least this long, an engine is taken to have restarted: its batch capacity is learnt again. */
const RELEARN_AFTER_DOWN_MS = 10_000;
/** A capacity just learnt, or whose probe found the engine full, is probed again no sooner than this; each probe that finds it full doubles it, up to PROBE_GAP_MAX_MS. */
const PROBE_GAP_MS = 5_000;
const PROBE_GAP_MAX_MS = 120_000;
/**
 * Connections the router may hold to one endpoint. Engines speak HTTP/1.1, one request per
 * connection for its whole answer, so this bounds the requests an engine can see at once:
 * it must not bind before the engine's own batch and queue do. At 256 an engine of 256
 * never showed a queue (the rest waited in the router's pool, unseen by its gauges and
 * first come, first served ahead of interactive requests) and was never learnt, and a
 * vLLM on a large GPU (1024 sequences by default) could never have been filled.
 */
const ENGINE_CONNECTIONS = 4_096;

export interface EndpointSpec {
  id: string;
  url: string;
  models: readonly string[];
  weight: number;
  /** Higher first: lower priorities take traffic only while no higher one can. */
  priority: number;
  /** The pool the endpoint belongs to (fabric/gpu class), for metrics and admission. */
  pool: string | null;
  /**
   * The engine's batch size (`--max-num-seqs`) where the config or the launch says it:
   * admission then counts room from it at once, and nothing learnt overrides it.
   */
  batchSize?: number | null;
  /**
   * The engine's per-step token budget (`--max-num-batched-tokens` with chunked prefill)
   * where the config says it; 0: none (every admitted prompt prefilled in one step);
   * null: unknown. Admission paces lower-band prefills only where the engine does not.
   */
  stepBudget?: number | null;
  /** How the engine orders a request's `priority` field, when it runs with a priority policy; null: it does not. */
  enginePriority?: EnginePriority | null;
  /** GPUs the engine runs on, for pricing in GPU-seconds; 1 when unset. */
  gpus?: number;
}

/** vLLM's `--scheduling-policy priority` serves lower values first; SGLang can be set either way. */
export type EnginePriority = 'lower-first' | 'higher-first';


export interface EndpointState extends EndpointSpec {
  /**
   * The engine's batch size, step budget and priority policy as the router uses them:
   * what the engine publishes (`published`), else what the config or launch said
   * (`configured`). The engine's word wins: a config goes stale when an engine is
   * restarted with other flags, and the engine cannot be wrong about itself.
   */
  batchSize: number | null;
  stepBudget: number | null;
  enginePriority: EnginePriority | null;
  /** The spec's values, kept apart so that an update compares against them, not against what the engine said. */
  configured: Pick<EndpointSpec, 'batchSize' | 'stepBudget' | 'enginePriority'>;
  /** What the engine publishes of its settings (SGLang's server info); null where it publishes none. */
  published: EngineSettings | null;
  gpus: number;
  ready: boolean;
  reason: string | null;
  probedAt: number | null;
  /** The context length the engine serves its model with (vLLM's max_model_len), from its /v1/models; null until listed. */
  maxModelLen: number | null;
  /** The engine's own last report, and when it was scraped; null until the first scrape. */
  load: EngineLoad | null;
  loadAt: number | null;
  loadError: string | null;
  /** Our requests in flight at the moment the load was scraped (see `load-estimate.ts`). */
  inflightAtLoad: number;
  /** Start and end times of recent requests, to line a scrape up with them. */
  readonly inflightLog: InflightLog;
  /**
   * How many requests the engine runs at once, learnt from scrapes that showed it
   * queueing (its running count then is its batch limit, by max_num_seqs or KV); null
   * until it has queued once.
   */
  batchCapacity: number | null;
  /** Consecutive scrapes that showed requests waiting. */
  queuedScrapes: number;
  /**
   * A learnt capacity is probed upwards (`learnCapacity`) no sooner than this; each probe
   * that overshot a full engine doubles `capacityProbeGapMs`, the wait before the next one.
   */
  capacityProbeAfter: number;
  capacityProbeGapMs: number;
  /** `peakRunning` when the current probe began: a probe that never saw more running overshot. */
  peakAtProbe: number;
  /**
   * The most requests the engine was seen running at once — by a scrape, or by the router
   * itself as requests streaming tokens from it (`streaming`): batch slots known to exist
   * while `batchCapacity` is not learnt, so requests sent beyond them count as waiting.
   * Forgotten with the capacity when the engine restarts.
   */
  peakRunning: number;
  /** When `peakRunning` last grew (-Infinity: never). */
  peakGrewAt: number;
  /**
   * The router's requests the engine is streaming tokens for (first token seen, not
   * ended): it runs at least these, whatever its last scrape says. Written only through a
   * `Lease`.
   */
  streaming: number;
  /** The engine's mean step time (ms) between its last two scrapes, from its inter-token latency; null until seen. */
  stepMs: number | null;
  /** Its steps between the last two scrapes were spent on their token budget (`spentOnBudget`). */
  budgetBound: boolean;
  /** When a ready endpoint last turned not ready; null while ready (or never ready yet). */
  downSince: number | null;
  /**
   * Requests this process has in flight to the endpoint: always current, unlike scraped
   * metrics. Written only through a `Lease` (`EndpointTable.lease`).
   */
  inflight: number;
  /**
   * Of `inflight`, the requests of the first admission band. The rest are what a
   * first-band request could find queued ahead of it inside the engine.
   */
  topInflight: number;
  /**
   * Of `topInflight`, those the engine has not yet answered with a first chunk: their
   * prompts wait for, or are in, a prefill step (`firstBandPrefilling`).
   */
  topPrefilling: number;
  /** When the last first-band request was sent here (-Infinity: never). */
  topSentAt: number;
  /**
   * Prompt tokens of paced lower-band requests sent here that the engine has not yet
   * answered with a first chunk: the prefill queued in it ahead of a first-band arrival.
   * Prefill pacing is an engine's, so the scheduler spreads it (`keepLeastPrefilling`).
   */
  lowerPrefilling: number;
  /** What the engine's prefill costs, from the first chunks of the router's requests (`prefill-rate.ts`). */
  readonly prefill: PrefillRate;
  /**
   * Lower-band requests sent to the engine that it can still be made to give back,
   * oldest first: streamed ones until their first token, collected ones until their
   * answer is sent (nothing of it has reached the client). A first-band request sent
   * there takes back the newest of them where it would find no free slot
   * (`Admission.makeWay`). Written only through a `Lease`.
   */
  readonly recallable: Lease[];
  /** When a scrape between polls was last asked for (`EndpointTable.touched`). */
  refreshAskedAt: number;
  /** No new requests; those in flight finish. Set when an update removes the endpoint. */
  draining: boolean;
  readonly health: EndpointHealth;
  /** One undici pool per endpoint: keep-alive connections, pipelining off. */
  readonly http: Pool;
}

export interface EndpointTableOptions {
  connectTimeoutMs: number;
  health: HealthPolicy;
  /**
   * Scrapes of an engine's load asked for between polls as the router's traffic to it
   * changes (`touched`), where one could tell something (`scrapeCouldTell`, with the
   * admission KV ceiling); absent: polls only.
   */
  refresh?: { ms: number; kvCeiling: number; ask: (id: string) => void };
  onBreakerChange?: (endpoint: string, from: BreakerState, to: BreakerState) => void;
}

/**
 * The main thread's view of every engine, read synchronously by the data port. Pollers
 * on a worker thread send probes through the endpoint-registry actor, which applies
 * them here; the request path never waits on another thread.
 */
export class EndpointTable {
  private readonly byId = new Map<string, EndpointState>();
  private byModel = new Map<string, EndpointState[]>();

  constructor(private readonly opts: EndpointTableOptions) {}

  add(spec: EndpointSpec): EndpointState {
    if (this.byId.has(spec.id)) throw new Error(`endpoint '${spec.id}' is already in the table`);
    const state: EndpointState = {
      ...spec,
      ready: false,
      reason: 'not probed yet',
      probedAt: null,
      maxModelLen: null,
      load: null,
      loadAt: null,
      loadError: null,
      inflightAtLoad: 0,
      inflightLog: new InflightLog(),
      batchSize: spec.batchSize ?? null,
      stepBudget: spec.stepBudget ?? null,
      enginePriority: spec.enginePriority ?? null,
      configured: { batchSize: spec.batchSize ?? null, stepBudget: spec.stepBudget ?? null, enginePriority: spec.enginePriority ?? null },
      published: null,
      gpus: spec.gpus ?? 1,
      batchCapacity: spec.batchSize ?? null,
      queuedScrapes: 0,
      capacityProbeAfter: -Infinity,
      capacityProbeGapMs: PROBE_GAP_MS,
      peakAtProbe: 0,
      peakRunning: 0,
      peakGrewAt: -Infinity,
      streaming: 0,
      stepMs: null,
      budgetBound: false,
      downSince: null,
      inflight: 0,
      topInflight: 0,
      topPrefilling: 0,
      topSentAt: -Infinity,
      lowerPrefilling: 0,
      prefill: new PrefillRate(),
      recallable: [],
      refreshAskedAt: -Infinity,
      draining: false,
      health: new EndpointHealth(this.opts.health, (from, to) => this.opts.onBreakerChange?.(spec.id, from, to)),
      http: new Pool(spec.url, { connections: ENGINE_CONNECTIONS, connectTimeout: this.opts.connectTimeoutMs, keepAliveTimeout: 30_000 }),
    };
    this.byId.set(spec.id, state);
    this.reindex();
    return state;
  }

  /**
   * Replaces the endpoint list. Endpoints that survive keep their live state (in-flight
   * count, breaker, last load), so one replica moving does not send every other one back
   * to cold. Removed endpoints stop taking requests at once and close their connections
   * once their requests in flight are done. Returns the ids added and removed.
   */
  update(specs: readonly EndpointSpec[]): { added: string[]; removed: string[] } {
    const wanted = new Map(specs.map((s) => [s.id, s]));
    const removed: string[] = [];
    for (const [id, e] of this.byId) {
      const next = wanted.get(id);
      if (next && next.url === e.url) {
        // Same engine: routing attributes may change, live state stays.
        e.models = next.models;
        e.weight = next.weight;
        e.priority = next.priority;
        e.pool = next.pool;
        e.gpus = next.gpus ?? 1;
        e.configured = { batchSize: next.batchSize ?? null, stepBudget: next.stepBudget ?? null, enginePriority: next.enginePriority ?? null };
        settle(e);
        continue;
      }
      this.byId.delete(id);
      e.draining = true;
      void e.http.close(); // undici lets requests in flight finish before closing
      removed.push(id);
    }
    const added: string[] = [];
    for (const s of specs) {
      if (this.byId.has(s.id)) continue;
      this.add(s);
      added.push(s.id);
    }
    this.reindex();
    return { added, removed };
  }

  apply(probe: EndpointProbe): void {
    const e = this.byId.get(probe.id);
    if (!e) return;
    // An engine down long enough to have been restarted may be back with other settings
    // (a smaller max_num_seqs, less KV cache): its batch is learnt again. A probe that
    // failed once under load is not a restart, and relearning then would let a slow start
    // overfill a busy engine.
    if (!probe.ready && e.ready) e.downSince = probe.at;
    if (probe.ready && !e.ready && e.downSince !== null && probe.at - e.downSince >= RELEARN_AFTER_DOWN_MS) {
      e.batchCapacity = e.batchSize;
      e.queuedScrapes = 0;
      e.peakRunning = 0;
      e.peakGrewAt = -Infinity;
      e.capacityProbeAfter = -Infinity;
      e.capacityProbeGapMs = PROBE_GAP_MS;
      e.peakAtProbe = 0;
      e.prefill.reset();
    }
    if (probe.ready) e.downSince = null;
    if (probe.settings !== undefined) {
      e.published = probe.settings;
      settle(e);
    }
    e.ready = probe.ready;
    e.reason = probe.reason;
    e.probedAt = probe.at;
    // Only a probe that read /v1/models knows; an engine down keeps what it last said.
    if (probe.ready) e.maxModelLen = probe.maxModelLen;
    this.loaded(e, probe.at, probe.load, probe.loadError);
  }

  /** A scrape of `id`'s load alone, taken at `at` (a refresh between polls). */
  applyLoad(id: string, at: number, load: EngineLoad | null, loadError: string | null): void {
    const e = this.byId.get(id);
    if (e) this.loaded(e, at, load, loadError);
  }

  private loaded(e: EndpointState, at: number, load: EngineLoad | null, loadError: string | null): void {
    if (!load) {
      e.loadError = loadError;
      return;
    }
    // A poll and a refresh can cross: an older scrape says nothing new.
    if (e.loadAt !== null && at < e.loadAt) return;
    const before = e.load;
    e.load = load;
    e.loadAt = at;
    // In flight when the scrape was taken, not now: what started since is not in the
    // engine's counts, and what ended since still is.
    const log = e.inflightLog;
    e.inflightAtLoad = e.inflight - log.startedSince(at) + log.endedSince(at);
    e.stepMs = stepTime(before, load) ?? e.stepMs;
    e.budgetBound = spentOnBudget(e, before, load);
    e.queuedScrapes = !e.budgetBound && queuedBeyondArrivals(e, load, at) ? e.queuedScrapes + 1 : 0;
    const full = e.queuedScrapes >= 2 || (e.queuedScrapes === 1 && fullOnOneScrape(e, before, load));
    if (load.running > e.peakRunning) {
      e.peakRunning = load.running;
      e.peakGrewAt = at;
    }
    // A batch size the engine or the config gives is the truth; learning only stands in for one.
    if (e.batchSize === null) learnCapacity(e, load, at, full);
    e.loadError = null;
  }

  /**
   * The router's own traffic to `e` changed: ask for a fresh scrape of its load if the
   * last one (or the last ask) is at least `refreshMs` old. Every estimate of what an
   * engine holds is its last scrape plus what the router did since, and a flood does a
   * poll interval's worth in milliseconds; between polls, this keeps the scrape to within
   * `refreshMs` of the traffic where that matters, at no cost while nothing changes.
   */
  touched(e: EndpointState, now: number): void {
    const r = this.opts.refresh;
    if (!r) return;
    const ms = mayOverfill(e) ? r.ms / DISCOVERY_REFRESH_DIVISOR : r.ms;
    if (now - e.refreshAskedAt < ms || (e.loadAt !== null && now - e.loadAt < ms) || !scrapeCouldTell(e, r.kvCeiling)) return;
    e.refreshAskedAt = now;
    r.ask(e.id);
  }

  /**
   * Counts one request in flight to `ep` until the lease is released. The data port
   * changes an endpoint's state only through leases, so the in-flight count, the
   * in-flight log and the breaker's trial cannot be left unbalanced by a missed path.
   */
  lease(ep: EndpointState, now: number, role: LeaseRole = 'plain', prefillTokens = 0): Lease {
    return new Lease(ep, now, role, this, prefillTokens);
  }

  /** The longest context among the model's ready endpoints; null while none has listed one. */
  maxModelLen(model: string): number | null {
    let max: number | null = null;
    for (const e of this.forModel(model)) {
      if (e.ready && !e.draining && e.maxModelLen !== null && (max === null || e.maxModelLen > max)) max = e.maxModelLen;
    }
    return max;
  }

  get(id: string): EndpointState | undefined {
    return this.byId.get(id);
  }

  forModel(model: string): readonly EndpointState[] {
    return this.byModel.get(model) ?? [];
  }

  all(): EndpointState[] {
    return [...this.byId.values()];
  }

  async close(): Promise<void> {
    await Promise.all(this.all().map((e) => e.http.close()));
  }

  private reindex(): void {
    const byModel = new Map<string, EndpointState[]>();
    for (const e of this.byId.values()) {
      for (const m of e.models) {
        let list = byModel.get(m);
        if (!list) byModel.set(m, (list = []));
        list.push(e);
      }
    }
    this.byModel = byModel;
  }
}

/** Where `e`'s batch capacity comes from: the engine's own settings, the config or launch, learning, or nowhere yet. */
export function batchCapacitySource(e: EndpointState): 'engine' | 'config' | 'learnt' | null {
  if (e.published?.batchSize != null) return 'engine';
  if (e.batchSize !== null) return 'config';
  return e.batchCapacity !== null ? 'learnt' : null;
}

/**
 * Takes the batch size, step budget and priority policy from the engine's own settings
 * where it publishes them, else from the config. A batch size that changed replaces the
 * capacity (none: learnt again from scratch).
 */
function settle(e: EndpointState): void {
  const p = e.published;
  const batchSize = p?.batchSize ?? e.configured.batchSize ?? null;
  e.stepBudget = p?.stepBudget ?? e.configured.stepBudget ?? null;
  e.enginePriority = p?.enginePriority ?? e.configured.enginePriority ?? null;
  if (batchSize !== e.batchSize) e.batchCapacity = e.batchSize = batchSize;
}

/** The engine's mean step time (ms) between two scrapes, from its inter-token latency totals; null without new tokens. */
function stepTime(before: EngineLoad | null, now: EngineLoad): number | null {
  const a = before?.itl;
  const b = now.itl;
  if (!a || !b || b.count <= a.count || b.sum < a.sum) return null;
  return ((b.sum - a.sum) / (b.count - a.count)) * 1000;
}

/** Mean tokens per step at or above this share of the step budget: the budget, not the batch, held the queue. */
const BUDGET_BOUND_SHARE = 0.75;
/**
 * vLLM's smallest default step budget. An engine whose steps all stayed below it has not
 * shown its budget: read as the largest step, an engine of 16 that had only run steps
 * of 16 tokens was taken to have spent a budget of 16 while 17 requests waited.
 */
const SMALLEST_BUDGET = 2048;

/** The engine's step budget: the known one, else as its steps have shown it (see `spentOnBudget`); null or 0 where it has none, or it cannot be told. */
function stepBudget(e: EndpointState, load: EngineLoad): number | null {
  if (e.stepBudget !== null) return e.stepBudget;
  const largest = load.steps ? largestStep(load.steps) : null;
  return largest === null ? null : Math.max(largest, SMALLEST_BUDGET);
}

/**
 * Whether one scrape that shows requests waiting shows a full engine. vLLM counts as
 * waiting only what its last scheduling pass left (a request that arrives during a step
 * is read off its input queue before the next pass), and a pass leaves one waiting for
 * want of a slot, of step budget or of KV cache. Where no step since the last scrape
 * came near the budget and the engine runs the most it was ever seen running, the slots
 * or the cache held it: that is the batch, and a second scrape adds nothing. A second
 * scrape is what an engine of unknown size under a 1 s poll rarely gives: the router
 * stops filling it at the first queue it sees, and it has drained by the next. Only for
 * engines that publish vLLM's step histogram; others count arrivals as waiting at once
 * (`queuedBeyondArrivals`), and their queue must show twice.
 */
function fullOnOneScrape(e: EndpointState, before: EngineLoad | null, now: EngineLoad): boolean {
  if (!now.steps || !before?.steps || now.running < Math.max(1, e.peakRunning)) return false;
  const budget = stepBudget(e, now);
  if (budget === 0) return true; // chunking off: nothing waits on a budget
  const largest = largestStep(now.steps, before.steps);
  return budget !== null && largest !== null && largest < budget;
}

/**
 * Whether the engine's steps between two scrapes were spent on their token budget
 * (vLLM's tokens-per-step histogram): requests then wait beside free slots, for the
 * budget, and a queue says nothing about the batch size. The budget is the known one,
 * else the smallest bucket bound no step exceeded, or `SMALLEST_BUDGET` where that is
 * less: a step that spends a budget of 8192 lands in the bucket of 8192, so an engine
 * that filled one step reads its budget exactly where it is a power of two, and up to
 * twice it elsewhere (then fewer queues are excused). A scrape with no step since the
 * last one keeps its verdict.
 *
 * In the admission bench, against the build before in the same session: `batch 256
 * varied` learnt 256 in four runs of six, against one; `vllm long, budget 2048`'s
 * engines of 16 were learnt at 16 in seven of eight, against four (12–15 otherwise),
 * though later in the flood (0.7–4.9 s against 0.3–0.6 s); bronze within the runs'
 * spread. It did not cure `batch 64 long varied` (25–33 of 64 learnt either way): its
 * false queues were the sim's, which counted the requests that arrived during a step as
 * waiting at its end, as vLLM does not.
 */
function spentOnBudget(e: EndpointState, before: EngineLoad | null, now: EngineLoad): boolean {
  const a = before?.steps;
  const b = now.steps;
  if (!a || !b || b.count < a.count || b.tokens < a.tokens) return false; // none published, or a restart
  if (b.count === a.count) return e.budgetBound; // no step since: as it was
  const budget = stepBudget(e, now);
  if (!budget) return false; // none (chunking off), or past every bucket
  const perStep = (b.tokens - a.tokens) / (b.count - a.count);
  // Mostly prefill: a full batch of decodes also fills its steps evenly, and a bucket.
  return perStep >= BUDGET_BOUND_SHARE * budget && perStep >= 2 * now.running;
}

/**
 * Whether a scrape shows the engine queueing for want of room, not only requests that
 * arrived during its last step: an engine with free slots runs those at its next step,
 * and a flood keeps a few in that state at every scrape — taken for queueing, they
 * taught capacities of 4–12 for engines of 16. Only what waits beyond the router's
 * requests started in the engine's last two steps counts; an engine that publishes its
 * inter-token latency is not read until its step time is known (a scrape after tokens
 * flowed), one that does not is read as before.
 */
function queuedBeyondArrivals(e: EndpointState, load: EngineLoad, at: number): boolean {
  if (load.waiting === 0) return false;
  if (e.stepMs === null) return !load.itl;
  return load.waiting > e.inflightLog.startedSince(at - 2 * e.stepMs);
}

/**
 * Between polls, an engine that `mayOverfill` is scraped this many times as often as
 * `load_refresh_ms` says: a flood meeting an engine of unknown size fills it past its
 * batch before any scrape shows a queue, and each interactive request sent until one
 * does waits behind the overfill inside the engine. Only then: a scrape costs the engine
 * and the telemetry thread, and a known batch needs none of it.
 */
const DISCOVERY_REFRESH_DIVISOR = 4;

/** The router holds more in flight to `e` than it was ever seen running, and its batch is not known: it may be queueing them now. */
function mayOverfill(e: EndpointState): boolean {
  return e.batchCapacity === null && e.inflight > e.peakRunning;
}

/**
 * The engine's batch capacity, from what it ran while requests waited (`full`). One
 * scrape of an engine that counts arrivals at once can catch it between steps, with new
 * arrivals waiting beside free slots; two in a row that show waiting requests mean it is
 * full, and so does one of vLLM's where its steps rule out the budget
 * (`fullOnOneScrape`). Never below the most it was seen
 * running (`peakRunning`): requests also wait beside free slots when a step's token
 * budget is spent or a cohort of equal answers has just ended, and the admission bench
 * learnt 1–6 for engines of 16 that way, which then held the lower bands to it for good.
 *
 * The same waits still teach too little: an engine of 256 fed a burst of prompts that
 * spends its step budget for a few steps was learnt at 64–152, and the lower bands, held
 * under a learnt capacity, never showed it more. So a learnt capacity the engine runs
 * near, with nothing waiting, is probed upwards by a sixteenth per scrape, as TCP probes
 * for bandwidth: where the engine is full, it queues without running more than it ever
 * did, the capacity falls back to the most it ran, and the next probe waits
 * `capacityProbeGapMs`, doubled each time a probe finds it full. A capacity just learnt
 * waits as long before its first probe. Each probe of a full engine spends the slots
 * kept for the first band until it is seen queueing (traced on engines of 16, ~0.3 s a
 * probe) or a recall for the first band finds it full (`probeFoundFull`, from
 * admission), and how an engine queues does not say whether it is full: one of 256 runs
 * 245–255 when scraped full, and one waiting on its step budget runs its most and holds
 * it as steadily.
 */
function learnCapacity(e: EndpointState, load: EngineLoad, at: number, full: boolean): void {
  const known = e.batchCapacity;
  if (full) {
    // First learnt, or probed past the most it ever ran and queueing without having run
    // more since the probe began: the next probe waits.
    if (known !== null && known > e.peakRunning && e.peakRunning <= e.peakAtProbe) probeFoundFull(e, at);
    else if (known === null) e.capacityProbeAfter = at + e.capacityProbeGapMs;
    e.batchCapacity = Math.max(load.running, e.peakRunning);
    return;
  }
  if (known === null) return;
  if (load.running > known) e.batchCapacity = load.running;
  else if (load.waiting === 0 && at >= e.capacityProbeAfter && load.running + Math.max(1, Math.ceil(known / 8)) >= known) {
    if (known <= e.peakRunning) e.peakAtProbe = e.peakRunning;
    e.batchCapacity = known + Math.ceil(known / 16);
  }
}

/**
 * Whether `e`'s learnt capacity is being probed: set above the most the engine was seen
 * running, which it has not run yet.
 */
export function probing(e: Pick<EndpointState, 'batchSize' | 'batchCapacity' | 'peakRunning'>): boolean {
  return e.batchSize === null && e.batchCapacity !== null && e.batchCapacity > e.peakRunning;
}

/**
 * The probe of `e`'s capacity found the engine full: the capacity falls back to the most
 * it ran, and the next probe waits twice as long as this one did.
 */
export function probeFoundFull(e: EndpointState, at: number): void {
  e.capacityProbeAfter = at + e.capacityProbeGapMs;
  e.capacityProbeGapMs = Math.min(PROBE_GAP_MAX_MS, e.capacityProbeGapMs * 2);
  e.batchCapacity = e.peakRunning;
}

/**
 * What a lease's request is to admission: of the first band (`topInflight` counts it); of
 * a lower band and recallable (`recallable`) — streamed, until its first token; collected,
 * until its answer is sent; or neither.
 */
export type LeaseRole = 'first-band' | 'streamed-lower' | 'collected-lower' | 'plain';

/**
 * One request's hold on one endpoint. Exactly one of `succeeded`, `failed` or
 * `abandoned` reports the outcome to the endpoint's health (or none, when the verdict is
 * left to someone who knows more: see the poison rule in the data port), and `release`
 * ends the hold; both are idempotent, so a `finally` can always call `release`.
 */
export class Lease {
  private reported = false;
  private released = false;
  private streaming = false;
  /** Counted in `endpoint.topPrefilling` (first band) or `endpoint.lowerPrefilling` (its `prefillTokens`). */
  private prefilling: boolean;
  /** In `endpoint.recallable`. */
  private listed = false;
  private onRecall: (() => boolean) | null = null;
  /** performance.now() when sent, for the engine's prefill cost: its first chunks come within a few ms on a fast engine. */
  private readonly sentAt = performance.now();
  /** Its first chunk came: `started` may be told again. */
  private answered = false;
  /** Sent with no free batch slot by the router's count (`batchSlots`, else the most the engine was seen running): it may wait in the engine's queue. */
  private readonly queued: boolean;
  /** Paced lower-band prompt tokens awaiting a first chunk on the endpoint once this was sent, its own included. */
  private readonly backlog: number;

  constructor(
    readonly endpoint: EndpointState,
    /** When it was sent, on the clock callers pass as `now`. */
    readonly leasedAt: number,
    private readonly role: LeaseRole = 'plain',
    private readonly table: Pick<EndpointTable, 'touched'> | null = null,
    /** A lower-band request's prompt tokens being paced (0: not paced, or an answer sent whole, whose first chunk is its end). */
    private readonly prefillTokens = 0,
  ) {
    endpoint.inflight++;
    this.queued = endpoint.inflight > (batchSlots(endpoint) ?? endpoint.peakRunning);
    const lower = role === 'streamed-lower' || role === 'collected-lower';
    this.prefilling = role === 'first-band' || (lower && prefillTokens > 0);
    if (role === 'first-band') {
      endpoint.topInflight++;
      endpoint.topPrefilling++;
      endpoint.topSentAt = leasedAt;
    }
    if (lower) {
      endpoint.lowerPrefilling += this.prefilling ? prefillTokens : 0;
      endpoint.recallable.push(this);
      this.listed = true;
    }
    this.backlog = endpoint.lowerPrefilling;
    endpoint.inflightLog.started(leasedAt);
    table?.touched(endpoint, leasedAt);
    endpoint.health.begin(leasedAt);
  }

  get id(): string {
    return this.endpoint.id;
  }

  /** Its paced lower-band prompt tokens, while they await their first chunk; else 0. */
  get awaitingPrefill(): number {
    return this.prefilling && this.role !== 'first-band' ? this.prefillTokens : 0;
  }

  get http(): Pool {
    return this.endpoint.http;
  }

  /**
   * What `recall` does: the attempt holding the lease cancels its request, or refuses
   * (false) where it is already ending otherwise.
   */
  whenRecalled(cancel: () => boolean): void {
    this.onRecall = cancel;
  }

  /**
   * The engine sent its first chunk. `tokens`: tokens stream from here on (not an answer
   * sent whole), so the engine runs it until it ends. Its time since it was sent is a
   * sample of the engine's prefill cost (`EndpointState.prefill`); `at`: performance.now().
   */
  started(tokens: boolean, at = performance.now()): void {
    if (!this.answered && !this.released) this.endpoint.prefill.firstChunk(this.sentAt, at, this.prefilling && this.role !== 'first-band' ? this.prefillTokens : 0, this.queued, this.backlog);
    this.answered = true;
    this.prefilled();
    if (!tokens || this.streaming || this.released) return;
    this.streaming = true;
    const e = this.endpoint;
    if (++e.streaming > e.peakRunning) {
      e.peakRunning = e.streaming;
      e.peakGrewAt = Date.now();
    }
  }

  /**
   * Takes the request back from the engine before anything of its answer reached the
   * client; false when it can no longer be. The hold ends at once: the engine frees a
   * cancelled request's slot, and what counts the engine's load must not wait for the
   * attempt to unwind.
   */
  recall(now: number): boolean {
    if (this.released || !this.listed || this.onRecall === null || !this.onRecall()) return false;
    this.release(now);
    return true;
  }

  /** Something of the answer is, or is about to be, the client's (or the engine gave its verdict): it can no longer be recalled. */
  committed(): void {
    this.leaveRecallable();
  }

  succeeded(): void {
    if (this.report()) this.endpoint.health.succeeded();
  }

  failed(now: number): void {
    if (this.report()) this.endpoint.health.failed(now);
  }

  /** The request ended without telling anything about the endpoint (the client left, or the request itself was at fault). */
  abandoned(): void {
    if (this.report()) this.endpoint.health.abandoned();
  }

  release(now: number): void {
    if (this.released) return;
    this.released = true;
    this.endpoint.inflight--;
    if (this.role === 'first-band') this.endpoint.topInflight--;
    this.prefilled();
    if (this.streaming) this.endpoint.streaming--;
    this.leaveRecallable();
    this.endpoint.inflightLog.ended(now);
    this.table?.touched(this.endpoint, now);
  }

  private prefilled(): void {
    if (!this.prefilling) return;
    this.prefilling = false;
    if (this.role === 'first-band') this.endpoint.topPrefilling--;
    else this.endpoint.lowerPrefilling -= this.prefillTokens;
  }

  private leaveRecallable(): void {
    if (!this.listed) return;
    this.listed = false;
    const list = this.endpoint.recallable;
    const at = list.indexOf(this);
    if (at !== -1) list.splice(at, 1);
  }

  private report(): boolean {
    if (this.reported) return false;
    this.reported = true;
    return true;
  }
}
