// The simulated engine: vLLM v1's continuous-batching scheduler over a KV cache with
// prefix caching, timed by a fitted step-time model. Pure logic plus a step loop driven by
// an EngineClock; it knows nothing of HTTP.
//
// What a router can observe must behave as in vLLM, so the scheduler follows vLLM v1:
// - every step first serves RUNNING sequences (a decode needs 1 token, an unfinished
//   prefill the rest of its prompt), then admits WAITING ones in queue order (first come,
//   first served; by request priority under `schedulingPolicy: 'priority'`) while
//   fewer than max_num_seqs run, the step's token budget (max_num_batched_tokens) lasts and
//   the KV cache can hold the next chunk; a long prompt is prefilled in chunks;
// - KV blocks are taken lazily, chunk by chunk; a new sequence reuses cached prefix blocks;
// - when a running sequence needs a block and none is free, the most recently admitted
//   running sequence (under `priority`, the least urgent) is preempted (recompute: its
//   blocks freed, it goes back to the FRONT of the queue, or to its place by priority)
//   and no new sequence is admitted in that step;
// - a step lasts β0 + β1·prefill_tokens + β2·decode_tokens µs (calibration.md), divided by
//   `speed`; a sequence emits its first token in the step that completes its prefill, then
//   one token per step.
// - the scheduler stats behind the gauges (running, waiting, KV usage) are refreshed at the
//   end of each step, and a request counts as waiting only once a step's scheduling pass
//   has left it so (vLLM reads new requests off its input queue between steps), so a
//   request that arrives while a long prefill step runs is not seen queued. Real engines
//   differ here, and a router must cope with each: `gauges: 'live'` shows the queues as
//   they are at scrape time, and `gaugeLagMs` publishes them only every N ms, as SGLang
//   does when it logs its scheduler stats every few dozen steps.
// - `maxNumBatchedTokens: 0` lifts the per-step token budget: everything admitted is
//   prefilled in one step, as in an engine without chunked prefill.
//
// Time is honest: a step's tokens are released no earlier than its simulated end. When the
// event loop wakes late, due steps run back to back on the engine's own clock (each still
// lasting its simulated time), so timer granularity does not throttle a fast engine.

import { BLOCK_SIZE, extendBlockHashes, KvCache } from './kv-cache.js';
import type { EngineClock } from './clock.js';
import { realClock } from './clock.js';
import { createLogger } from '../log.js';

const log = createLogger('sim.engine');

/** Step-time coefficients in µs: per step, per prefill token, per decode token. */
export interface StepModel {
  beta0: number;
  beta1: number;
  beta2: number;
}

/** Llama-3.1-8B on one H100 (TP1), vLLM v0.8.4, from the BLIS simulator's fit. */
export const LLAMA_3_1_8B_H100: StepModel = Object.freeze({ beta0: 5752.7, beta1: 17.25, beta2: 6.0 });

export const ENGINE_DEFAULTS = Object.freeze({
  maxNumSeqs: 256,
  numGpuBlocks: 29205, // Llama-3.1-8B on an 80 GB H100 at 0.9 memory utilization (~467k tokens)
  maxModelLen: 32768,
  maxNumBatchedTokens: 8192, // vLLM's default for online serving on large GPUs
  gauges: 'step' as GaugeTiming, // vLLM's scheduler stats
  gaugeLagMs: 0,
  speed: 1,
  maxLagMs: 20, // wall-clock lag the engine will catch up on before it gives the time up
});

/**
 * What the gauges read: `step`, the scheduler stats of the last step (vLLM); `live`, the
 * queues as they are at the moment of reading.
 */
export type GaugeTiming = 'step' | 'live';

/**
 * How the waiting queue is ordered, as vLLM's `--scheduling-policy`: `fcfs`, by arrival;
 * `priority`, by the request's `priority` (lower first), then arrival, and a KV-cache
 * shortage preempts the running sequence of the lowest priority (latest arrival among
 * equals) instead of the last admitted. As in vLLM, a full batch (max_num_seqs) is never
 * preempted for a waiting request of higher priority: it waits for a slot, first in line.
 */
export type SchedulingPolicy = 'fcfs' | 'priority';

export interface SimEngineConfig {
  maxNumSeqs?: number | undefined;
  numGpuBlocks?: number | undefined;
  /** Longest prompt + completion. Defaults to min(32768, what the KV cache holds). */
  maxModelLen?: number | undefined;
  /** Per-step token budget; 0 = none (no chunked prefill). */
  maxNumBatchedTokens?: number | undefined;
  /** vLLM's --scheduling-policy (see `SchedulingPolicy`). */
  schedulingPolicy?: SchedulingPolicy | undefined;
  gauges?: GaugeTiming | undefined;
  /** > 0: the gauges change only every this many ms (on a grid from the engine's start). */
  gaugeLagMs?: number | undefined;
  /** Time factor: 10 runs every simulated duration ten times faster. */
  speed?: number | undefined;
  stepModel?: StepModel | undefined;
  enablePrefixCaching?: boolean | undefined;
  clock?: EngineClock | undefined;
  /**
   * How far (ms) the engine may fall behind the clock and still catch up. Beyond it (a long
   * GC pause, an overloaded CPU) the lost time is dropped instead of replayed as a burst.
   */
  maxLagMs?: number | undefined;
}

export type FinishReason = 'stop' | 'length' | 'abort';
export type SequenceState = 'waiting' | 'running' | 'finished';

export interface SubmitRequest {
  /** Request id, for logs and for abort by id. */
  id: string;
  promptTokenIds: readonly number[];
  /** The completion this sequence will emit, token by token (see text.ts). */
  outputTokenIds: readonly number[];
  /** Reason reported when the planned output is exhausted. */
  finishReason: 'stop' | 'length';
  /** Lower runs first under the `priority` policy; 0 when unset. */
  priority?: number | undefined;
  /** Output token `index` was produced (its id is `outputTokenIds[index]`). */
  onToken?: ((seq: Sequence, index: number) => void) | undefined;
  onFinish?: ((seq: Sequence, reason: FinishReason) => void) | undefined;
}

/** One sequence's life in the engine. Fields are written by the engine only. */
export class Sequence {
  readonly id: string;
  readonly numPromptTokens: number;
  readonly plannedOutput: readonly number[];
  readonly plannedFinish: 'stop' | 'length';
  readonly priority: number;
  /** Prompt followed by the output emitted so far. */
  readonly tokens: number[];
  state: SequenceState = 'waiting';
  numOutputTokens = 0;
  /** Tokens whose KV is computed (or taken from the prefix cache). */
  numComputed = 0;
  /** Prompt tokens served from the prefix cache at first admission; -1 until admitted. */
  numCachedTokens = -1;
  numPreemptions = 0;
  /** KV blocks held, in token order. */
  blocks: number[] = [];
  /** Chained hashes of the full blocks of `tokens`, extended as it grows. */
  readonly blockHashes: number[] = [];
  /** Leading blocks already offered to the prefix cache. */
  numHashedBlocks = 0;
  readonly arrivalMs: number;
  firstScheduledMs = -1;
  firstTokenMs = -1;
  lastTokenMs = -1;
  finishedMs = -1;
  finishReason: FinishReason | null = null;
  /** @internal */ readonly handlers: Pick<SubmitRequest, 'onToken' | 'onFinish'>;

  constructor(req: SubmitRequest, arrivalMs: number) {
    this.id = req.id;
    this.numPromptTokens = req.promptTokenIds.length;
    this.plannedOutput = req.outputTokenIds;
    this.plannedFinish = req.finishReason;
    this.priority = req.priority ?? 0;
    this.tokens = req.promptTokenIds.slice();
    this.arrivalMs = arrivalMs;
    this.handlers = { onToken: req.onToken, onFinish: req.onFinish };
  }
}

/** What one engine step did; handed to observers when the step is scheduled. */
export interface StepInfo {
  startMs: number;
  endMs: number;
  prefillTokens: number;
  decodeTokens: number;
  numSeqs: number;
}

/** Hooks for metrics and specs; every method optional. */
export interface EngineObserver {
  /** A sequence joined the running batch (again, after a preemption); prefix lookup in tokens. */
  onScheduled?(seq: Sequence, queriedTokens: number, hitTokens: number, atMs: number): void;
  onPreempted?(seq: Sequence, atMs: number): void;
  /** One output token; `first` marks the end of prefill. `sinceLastMs` is the ITL (0 for the first). */
  onToken?(seq: Sequence, atMs: number, first: boolean, sinceLastMs: number): void;
  onFinished?(seq: Sequence, reason: FinishReason, atMs: number): void;
  onStep?(step: StepInfo): void;
  /** The step ended: its tokens are out (where vLLM records its iteration stats). */
  onStepEnd?(step: StepInfo): void;
}

/** Scheduler stats as of the end of the last step. */
export interface EngineReport {
  running: number;
  waiting: number;
  /** Fraction 0–1 of KV blocks held by sequences (vllm:kv_cache_usage_perc). */
  kvUsage: number;
}

/** Running totals, for specs and gauges; metrics counters are fed by observers. */
export interface EngineCounters {
  steps: number;
  preemptions: number;
  promptTokens: number;
  generationTokens: number;
  prefixQueriedTokens: number;
  prefixHitTokens: number;
  finished: Record<FinishReason, number>;
}

interface Step extends StepInfo {
  seqs: Sequence[];
  counts: number[];
}

export class SimEngine {
  readonly maxNumSeqs: number;
  readonly maxModelLen: number;
  /** Infinity when there is no per-step budget. */
  readonly maxNumBatchedTokens: number;
  readonly speed: number;
  readonly stepModel: StepModel;
  readonly schedulingPolicy: SchedulingPolicy;
  readonly kv: KvCache;
  readonly counters: EngineCounters = {
    steps: 0,
    preemptions: 0,
    promptTokens: 0,
    generationTokens: 0,
    prefixQueriedTokens: 0,
    prefixHitTokens: 0,
    finished: { stop: 0, length: 0, abort: 0 },
  };

  private readonly clock: EngineClock;
  private readonly maxLagMs: number;
  // In scheduling order (`enqueue`): FCFS, with preempted sequences put back at the front.
  private readonly waiting: Sequence[] = [];
  // In admission order: the last one is the first to be preempted.
  private readonly running: Sequence[] = [];
  private readonly live = new Map<string, Sequence>();
  private readonly observers: EngineObserver[] = [];
  private current: Step | null = null;
  readonly gauges: GaugeTiming;
  readonly gaugeLagMs: number;
  private readonly stepReport: EngineReport = { running: 0, waiting: 0, kvUsage: 0 };
  /** What lagged gauges show: the source copied at the last grid point. */
  private readonly published: EngineReport = { running: 0, waiting: 0, kvUsage: 0 };
  private readonly originMs: number;
  private cancelPublish: (() => void) | null = null;
  private cancelTimer: (() => void) | null = null;
  /** Engine time: when the last step ended. */
  private clockMs: number;
  private closed = false;
  private ticking = false;
  private stallLogged = false;

  constructor(config: SimEngineConfig = {}) {
    const numGpuBlocks = config.numGpuBlocks ?? ENGINE_DEFAULTS.numGpuBlocks;
    const capacity = numGpuBlocks * BLOCK_SIZE;
    this.maxNumSeqs = config.maxNumSeqs ?? ENGINE_DEFAULTS.maxNumSeqs;
    this.maxModelLen = config.maxModelLen ?? Math.min(ENGINE_DEFAULTS.maxModelLen, capacity);
    const budget = config.maxNumBatchedTokens ?? Math.max(ENGINE_DEFAULTS.maxNumBatchedTokens, this.maxNumSeqs);
    checkWhole('maxNumBatchedTokens', budget, 0);
    this.maxNumBatchedTokens = budget === 0 ? Infinity : budget;
    this.gauges = config.gauges ?? ENGINE_DEFAULTS.gauges;
    this.gaugeLagMs = config.gaugeLagMs ?? ENGINE_DEFAULTS.gaugeLagMs;
    this.speed = config.speed ?? ENGINE_DEFAULTS.speed;
    this.stepModel = config.stepModel ?? LLAMA_3_1_8B_H100;
    this.maxLagMs = config.maxLagMs ?? ENGINE_DEFAULTS.maxLagMs;
    this.schedulingPolicy = config.schedulingPolicy ?? 'fcfs';
    if (this.schedulingPolicy !== 'fcfs' && this.schedulingPolicy !== 'priority') throw new RangeError(`schedulingPolicy must be fcfs or priority, not '${String(this.schedulingPolicy)}'`);
    this.clock = config.clock ?? realClock;
    checkWhole('maxNumSeqs', this.maxNumSeqs, 1);
    checkWhole('numGpuBlocks', numGpuBlocks, 1);
    checkWhole('maxModelLen', this.maxModelLen, 2);
    if (this.gauges !== 'step' && this.gauges !== 'live') throw new RangeError(`gauges must be step or live, not '${String(this.gauges)}'`);
    checkWhole('gaugeLagMs', this.gaugeLagMs, 0);
    if (!(this.speed > 0) || !Number.isFinite(this.speed)) throw new RangeError(`speed must be a number > 0, not ${this.speed}`);
    // vLLM refuses to start when one maximal sequence cannot fit in the cache; so do we,
    // because such a sequence could never be scheduled and would stall the queue.
    if (this.maxModelLen > capacity) {
      throw new RangeError(
        `max_model_len ${this.maxModelLen} is larger than the KV cache holds (${numGpuBlocks} blocks × ${BLOCK_SIZE} = ${capacity} tokens): raise numGpuBlocks or lower maxModelLen`,
      );
    }
    if (this.maxNumBatchedTokens < this.maxNumSeqs) {
      throw new RangeError(`maxNumBatchedTokens (${this.maxNumBatchedTokens}) must be ≥ maxNumSeqs (${this.maxNumSeqs}), or a full batch could not decode in one step`);
    }
    this.kv = new KvCache(numGpuBlocks, config.enablePrefixCaching ?? true);
    this.clockMs = this.clock.now();
    this.originMs = this.clockMs;
  }

  get numRunning(): number {
    return this.running.length;
  }

  get numWaiting(): number {
    return this.waiting.length;
  }

  /** Fraction 0–1 of KV blocks held by sequences. */
  get kvUsage(): number {
    return this.kv.usage();
  }

  /**
   * The counts as the engine last reported them, which is what its gauges show. By
   * default as vLLM: it refreshes its scheduler stats once per step, so a request that
   * just arrived is counted a step later and a router scraping the gauges sees the engine
   * a step behind. See `gauges` and `gaugeLagMs` for the other behaviours.
   */
  get reported(): Readonly<EngineReport> {
    return this.gaugeLagMs > 0 ? this.published : this.gaugeSource();
  }

  private gaugeSource(): EngineReport {
    if (this.gauges === 'step') return this.stepReport;
    return { running: this.running.length, waiting: this.waiting.length, kvUsage: this.kv.usage() };
  }

  /**
   * Something the gauges show may have changed: with a lag, publish at the next grid
   * point. The timer is armed only while there is news, so an idle engine sets none.
   */
  private gaugesChanged(): void {
    if (this.gaugeLagMs === 0 || this.cancelPublish || this.closed) return;
    const delay = this.gaugeLagMs - ((this.clock.now() - this.originMs) % this.gaugeLagMs);
    this.cancelPublish = this.clock.schedule(this.publish, delay);
  }

  private readonly publish = (): void => {
    this.cancelPublish = null;
    Object.assign(this.published, this.gaugeSource());
  };

  /** After close(): every new submit is refused. */
  get isClosed(): boolean {
    return this.closed;
  }

  /** Whether a step is in flight or due (false when the loop sleeps). */
  get busy(): boolean {
    return this.current !== null || this.cancelTimer !== null;
  }

  now(): number {
    return this.clock.now();
  }

  addObserver(o: EngineObserver): () => void {
    this.observers.push(o);
    return () => {
      const i = this.observers.indexOf(o);
      if (i >= 0) this.observers.splice(i, 1);
    };
  }

  /** Queues a sequence; tokens and the finish arrive through its callbacks. */
  submit(req: SubmitRequest): Sequence {
    if (this.closed) throw new Error('engine is closed');
    const total = req.promptTokenIds.length + req.outputTokenIds.length;
    if (req.promptTokenIds.length < 1 || req.outputTokenIds.length < 1) throw new RangeError('a sequence needs at least one prompt token and one output token');
    if (total > this.maxModelLen) throw new RangeError(`prompt + output is ${total} tokens, over max_model_len ${this.maxModelLen}`);
    if (this.live.has(req.id)) throw new RangeError(`request id '${req.id}' is already in the engine`);
    if (req.priority !== undefined && !Number.isSafeInteger(req.priority)) throw new RangeError(`priority must be an integer, not ${req.priority}`);
    if ((req.priority ?? 0) !== 0 && this.schedulingPolicy !== 'priority') throw new RangeError(`Got priority ${req.priority} but Priority scheduling is not enabled.`);
    const seq = new Sequence(req, this.clock.now());
    this.enqueue(seq, false);
    this.live.set(seq.id, seq);
    this.kick();
    this.gaugesChanged();
    return seq;
  }

  /** Ends a sequence early (client went away); its blocks are freed at once. */
  abort(seqOrId: Sequence | string): boolean {
    const seq = typeof seqOrId === 'string' ? this.live.get(seqOrId) : seqOrId;
    if (!seq || seq.state === 'finished') return false;
    this.finish(seq, 'abort', Math.max(this.clock.now(), this.clockMs));
    this.gaugesChanged();
    return true;
  }

  /** Aborts everything and stops the loop. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.cancelTimer?.();
    this.cancelTimer = null;
    this.cancelPublish?.();
    this.cancelPublish = null;
    this.current = null;
    for (const seq of [...this.running, ...this.waiting]) this.finish(seq, 'abort', this.clock.now());
  }

  // ---- step loop ----

  private kick(): void {
    // Inside a tick (a handler submitting from onFinish) the running tick picks it up.
    if (this.ticking || this.current || this.cancelTimer || this.closed) return;
    this.cancelTimer = this.clock.schedule(this.tick, 0);
  }

  private readonly tick = (): void => {
    this.cancelTimer = null;
    this.ticking = true;
    try {
      this.runDueSteps();
    } finally {
      this.ticking = false;
    }
  };

  private runDueSteps(): void {
    const began = this.clock.now();
    let now = began;
    for (;;) {
      if (this.current) {
        if (now < this.current.endMs) break;
        const done = this.current;
        this.current = null;
        this.clockMs = done.endMs;
        this.completeStep(done);
      }
      if (this.closed) return;
      this.current = this.startStep(now);
      if (!this.current) return; // nothing to do: sleep until the next submit
      now = this.clock.now();
      // Catching up after a late wake-up: let sockets breathe every few ms.
      if (now - began > 5 && now >= this.current.endMs) break;
    }
    this.cancelTimer = this.clock.schedule(this.tick, this.current.endMs - now);
  }

  private startStep(now: number): Step | null {
    if (this.running.length === 0 && this.waiting.length === 0) return null;
    let start = Math.max(this.clockMs, now - this.maxLagMs);
    let step = this.schedule(start);
    if (!step && this.running.length === 0 && this.waiting.length > 0 && this.waiting[0]!.arrivalMs > start) {
      // Idle engine: the next step starts when the first queued request arrived.
      start = this.waiting[0]!.arrivalMs;
      step = this.schedule(start);
    }
    if (!step) {
      if (!this.stallLogged && this.waiting.length > 0) {
        this.stallLogged = true;
        log.error('engine stalled: nothing schedulable', { waiting: this.waiting.length, running: this.running.length, freeBlocks: this.kv.numFreeBlocks });
      }
      return null;
    }
    this.counters.steps++;
    for (const o of this.observers) o.onStep?.(step);
    return step;
  }

  /** One scheduling pass at `start` (vLLM v1 Scheduler.schedule). */
  private schedule(start: number): Step | null {
    let budget = this.maxNumBatchedTokens;
    const seqs: Sequence[] = [];
    const counts: number[] = [];
    let prefill = 0;
    let decode = 0;
    let preempted = false;
    // A decode computes only the token sampled last step; anything else is prefill
    // (including the recompute of a preempted sequence's output).
    const isDecode = (seq: Sequence, n: number): boolean => n === 1 && seq.numOutputTokens > 0 && seq.numComputed === seq.tokens.length - 1;
    const take = (seq: Sequence, n: number): void => {
      seqs.push(seq);
      counts.push(n);
      budget -= n;
      if (isDecode(seq, n)) decode++;
      else prefill += n;
    };
    const untake = (seq: Sequence): void => {
      const k = seqs.indexOf(seq);
      const n = counts[k]!;
      seqs.splice(k, 1);
      counts.splice(k, 1);
      budget += n;
      if (isDecode(seq, n)) decode--;
      else prefill -= n;
    };

    for (let i = 0; i < this.running.length && budget > 0; ) {
      const seq = this.running[i]!;
      const n = Math.min(seq.tokens.length - seq.numComputed, budget);
      let ok = this.allocateSlots(seq, n, []);
      while (!ok) {
        const v = this.victimIndex();
        const victim = this.running[v]!;
        this.running.splice(v, 1);
        // A victim scheduled earlier in this step gives its tokens back.
        if (v < i) {
          untake(victim);
          i--;
        }
        this.preempt(victim, start);
        preempted = true;
        if (victim === seq) break;
        ok = this.allocateSlots(seq, n, []);
      }
      if (!ok) break;
      take(seq, n);
      i++;
    }

    // No admissions in a step that had to preempt: the cache is full.
    while (!preempted && budget > 0 && this.waiting.length > 0 && this.running.length < this.maxNumSeqs) {
      const seq = this.waiting[0]!;
      if (seq.arrivalMs > start) break; // not arrived yet at this (past) step's start
      extendBlockHashes(seq.blockHashes, seq.tokens);
      // At least one token must be computed to produce logits, so a fully cached prompt
      // still recomputes its last block (vLLM caps the hit at num_tokens − 1).
      const hits = this.kv.lookup(seq.blockHashes, Math.floor((seq.tokens.length - 1) / BLOCK_SIZE));
      const cached = hits.length * BLOCK_SIZE;
      const n = Math.min(seq.tokens.length - cached, budget);
      seq.numComputed = cached;
      if (!this.allocateSlots(seq, n, hits)) {
        seq.numComputed = 0;
        break; // nobody overtakes the head of the queue
      }
      this.waiting.shift();
      seq.state = 'running';
      this.running.push(seq);
      if (seq.numCachedTokens < 0) seq.numCachedTokens = cached;
      if (seq.firstScheduledMs < 0) seq.firstScheduledMs = start;
      this.counters.prefixQueriedTokens += seq.tokens.length;
      this.counters.prefixHitTokens += cached;
      for (const o of this.observers) o.onScheduled?.(seq, seq.tokens.length, cached, start);
      take(seq, n);
    }

    if (seqs.length === 0) return null;
    const us = this.stepModel.beta0 + this.stepModel.beta1 * prefill + this.stepModel.beta2 * decode;
    const endMs = start + us / 1000 / this.speed;
    return { startMs: start, endMs, prefillTokens: prefill, decodeTokens: decode, numSeqs: seqs.length, seqs, counts };
  }

  /**
   * Gives `seq` the blocks to hold `n` more tokens after its computed ones (plus `hits`,
   * prefix blocks it is about to reuse). False, and nothing changed, if they are not free.
   */
  private allocateSlots(seq: Sequence, n: number, hits: readonly number[]): boolean {
    const total = seq.numComputed + n;
    const fresh = Math.ceil(total / BLOCK_SIZE) - seq.blocks.length - hits.length;
    if (!this.kv.canAllocate(Math.max(0, fresh), hits)) return false;
    if (hits.length > 0) {
      this.kv.touch(hits);
      for (const b of hits) seq.blocks.push(b);
    }
    for (let i = 0; i < fresh; i++) seq.blocks.push(this.kv.allocate());
    // Blocks that this step fills become findable now, as in vLLM: the step runs before
    // the next scheduling pass, so a later request never reads an uncomputed block.
    extendBlockHashes(seq.blockHashes, seq.tokens);
    const full = Math.min(Math.floor(total / BLOCK_SIZE), seq.blockHashes.length);
    for (let b = seq.numHashedBlocks; b < full; b++) this.kv.cacheBlock(seq.blocks[b]!, seq.blockHashes[b]!);
    if (full > seq.numHashedBlocks) seq.numHashedBlocks = full;
    return true;
  }

  /** Which running sequence a KV shortage preempts: the last admitted (FCFS), or the least urgent (priority). */
  private victimIndex(): number {
    const running = this.running;
    if (this.schedulingPolicy === 'fcfs') return running.length - 1;
    let v = running.length - 1;
    for (let k = running.length - 2; k >= 0; k--) {
      const a = running[k]!;
      const b = running[v]!;
      if (a.priority > b.priority || (a.priority === b.priority && a.arrivalMs > b.arrivalMs)) v = k;
    }
    return v;
  }

  /**
   * Puts `seq` in the waiting queue where the policy says: FCFS at the back, or at the
   * front when it was preempted; by priority after every sequence that goes before it
   * (lower priority value, then earlier arrival).
   */
  private enqueue(seq: Sequence, preempted: boolean): void {
    const waiting = this.waiting;
    if (this.schedulingPolicy === 'fcfs') {
      if (preempted) waiting.unshift(seq);
      else waiting.push(seq);
      return;
    }
    let k = waiting.length;
    while (k > 0 && (waiting[k - 1]!.priority > seq.priority || (waiting[k - 1]!.priority === seq.priority && waiting[k - 1]!.arrivalMs > seq.arrivalMs))) k--;
    waiting.splice(k, 0, seq);
  }

  private preempt(seq: Sequence, atMs: number): void {
    this.kv.release(seq.blocks);
    seq.blocks = [];
    seq.numComputed = 0;
    seq.numHashedBlocks = 0;
    seq.state = 'waiting';
    seq.numPreemptions++;
    this.enqueue(seq, true);
    this.counters.preemptions++;
    for (const o of this.observers) o.onPreempted?.(seq, atMs);
  }

  private completeStep(step: Step): void {
    const t = step.endMs;
    for (let k = 0; k < step.seqs.length; k++) {
      const seq = step.seqs[k]!;
      if (seq.state !== 'running') continue; // aborted while the step ran
      seq.numComputed += step.counts[k]!;
      if (seq.numComputed < seq.tokens.length) continue; // a prefill chunk, not the last one
      this.emit(seq, t);
    }
    this.stepReport.running = this.running.length;
    // The queue this step's scheduling pass left, as vLLM's stats after a step: a request
    // that came in while the step ran is still on vLLM's input queue, read before the next
    // pass, so it is not counted until a pass has left it waiting.
    let left = 0;
    for (const seq of this.waiting) if (seq.arrivalMs <= step.startMs) left++;
    this.stepReport.waiting = left;
    this.stepReport.kvUsage = this.kv.usage();
    for (const o of this.observers) o.onStepEnd?.(step);
    this.gaugesChanged();
  }

  private emit(seq: Sequence, t: number): void {
    const index = seq.numOutputTokens;
    seq.tokens.push(seq.plannedOutput[index]!);
    seq.numOutputTokens++;
    const first = index === 0;
    const sinceLast = first ? 0 : t - seq.lastTokenMs;
    if (first) {
      seq.firstTokenMs = t;
      this.counters.promptTokens += seq.numPromptTokens;
    }
    seq.lastTokenMs = t;
    this.counters.generationTokens++;
    for (const o of this.observers) o.onToken?.(seq, t, first, sinceLast);
    guard(seq, 'onToken', () => seq.handlers.onToken?.(seq, index));
    if (seq.numOutputTokens >= seq.plannedOutput.length && seq.state === 'running') this.finish(seq, seq.plannedFinish, t);
  }

  private finish(seq: Sequence, reason: FinishReason, t: number): void {
    if (seq.state === 'running') remove(this.running, seq);
    else if (seq.state === 'waiting') remove(this.waiting, seq);
    else return;
    this.kv.release(seq.blocks);
    seq.blocks = [];
    seq.state = 'finished';
    seq.finishReason = reason;
    seq.finishedMs = t;
    this.live.delete(seq.id);
    this.counters.finished[reason]++;
    for (const o of this.observers) o.onFinished?.(seq, reason, t);
    guard(seq, 'onFinish', () => seq.handlers.onFinish?.(seq, reason));
  }
}

function remove(list: Sequence[], seq: Sequence): void {
  const i = list.indexOf(seq);
  if (i >= 0) list.splice(i, 1);
}

// A failing consumer (a socket that broke mid-write) must not take the step loop down
// with it: every other sequence in the batch still needs its token.
function guard(seq: Sequence, what: string, fn: () => void): void {
  try {
    fn();
  } catch (err) {
    log.warn(`sequence ${what} handler threw`, { id: seq.id, err });
  }
}

function checkWhole(name: string, v: number, min: number): void {
  if (!Number.isInteger(v) || v < min) throw new RangeError(`${name} must be a whole number ≥ ${min}, not ${v}`);
}
