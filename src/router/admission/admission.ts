import type { AdmissionConfig } from '../../config/types.js';
import type { LlmgwError } from '../../errors.js';
import { probeFoundFull, probing, type EndpointState, type EndpointTable } from '../endpoint-table.js';
import { firstBandPrefilling, queueing } from '../load-estimate.js';
import { AdmissionQueue, type Ticket } from './admission-queue.js';
import { AdaptiveLimit } from './adaptive-limit.js';
import { pacingBudget, PrefillPacing, replicaHasRoom, type PacingLimits } from './prefill-pacing.js';
import { recallCount, recallUnpacedPrefill } from './recall.js';
import { saturation, servingPriority, usable, type Saturation } from './saturation.js';

/**
 * How the router sees a request's first token: `streamed`, the client streams it;
 * `collected`, the engine streams an answer the router sends whole; `whole`, the engine
 * sends the answer whole, so its first token is seen only with its last.
 */
export type FirstTokenSeen = 'streamed' | 'collected' | 'whole';

/** How long after the last first-band request lower bands are still held to the adaptive limit on engines of unknown size. */
const TOP_BAND_IDLE_MS = 60_000;
/** How long an engine's most-seen-running must have stood for a recall from it to bring the adaptive limit down to it. */
const PEAK_SETTLED_MS = 200;
/** Weight of each new sample in the smoothed time from admission to a streamed first token. */
const TTFT_SMOOTHING = 0.2;
/** Lower bands keep off a replica this many idle first tokens after a first-band request is sent there (`firstBandGateMs`). */
const FIRST_BAND_GATE = 2;

/**
 * Admission control for one model. The data port asks `tryAdmit` on every request: when
 * nothing waits and the engines are not saturated, the answer is yes and costs a loop
 * over the model's endpoints; otherwise the request queues and `wait` resolves when it
 * is released — as capacity frees (a request of the model completes, a new scrape shows
 * room, the periodic tick), highest band first.
 */
export class Admission {
  readonly queue: AdmissionQueue;
  /** Released but not yet in flight: counted as load so one release does not become many. */
  private inTransit = 0;
  /** Requests of the first band in flight: lower bands leave as many batch slots free again. */
  private topInflight = 0;
  /** When a first-band request was last admitted; -Infinity: never. */
  private lastTopAt = -Infinity;
  /** When the first band last became active (`firstBandActive`): lower-band requests sent since were paced. */
  private pacedSince = -Infinity;
  private readonly pacing: PrefillPacing;
  /** Lower bands' limit on engines of unknown size, from the first tokens of the requests admitted. */
  private readonly limit = new AdaptiveLimit();
  /** Admission to a first token seen as it came, smoothed (ms); null until one was seen. */
  private streamedTtftMs: number | null = null;
  /**
   * Paced requests whose answer is not streamed, in admission order, with when their
   * prefill is taken as done. Their first token is not seen before the whole answer
   * (a batch job's usual shape): counting their prompt until then held bronze to a few
   * requests per replica, as many decode steps as its answer takes past its prefill.
   */
  private readonly unseen: { permit: Permit; doneAt: number }[] = [];

  constructor(
    readonly model: string,
    private readonly table: EndpointTable,
    private readonly cfg: AdmissionConfig,
    private readonly staleAfterMs: number,
  ) {
    this.queue = new AdmissionQueue(model, cfg.bands, cfg.aging_ms, cfg.max_queued);
    this.pacing = new PrefillPacing(cfg.prefill_tokens_per_replica);
  }

  /** Requests per replica the lower bands may keep in flight to an engine of unknown size (`adaptive-limit.ts`). */
  get adaptiveLimit(): number {
    return this.limit.limit;
  }

  /**
   * How long lower bands keep off a replica after a first-band request is sent there,
   * unless its first chunk comes sooner (`firstBandPrefilling`): twice the idle first
   * token, the fastest streamed one the model has had (∞ until one is seen). Bounded at
   * twice platinum's p50 alone, the oracle router of the admission-bound suite (`vllm
   * long`, one long prompt at a time, reacting 1–2 ms late) read 1.38–1.54× at bronze
   * 0.69–0.84, both budgets met in 8 settings of 10; gated until the first token
   * 1.40–1.47×, at the p50 alone 1.41–1.73× (the gate opened before platinum's step began).
   */
  get firstBandGateMs(): number {
    return FIRST_BAND_GATE * this.limit.idleTtftMs;
  }

  /** Whether requests of `band` are prefill-paced: the caller then passes their estimated prompt tokens. */
  paces(band: number): boolean {
    return this.pacing.paces(band);
  }

  /**
   * Why the model counts as saturated now for a request of `band`, or null. Bands below
   * the first may not use the reserved share of the engines' batch slots.
   */
  saturated(now: number, band = 0): Saturation {
    // The reserved share is kept free even while no first-band request is in flight: the
    // first one after a quiet spell must find a slot, not wait for a full batch to end.
    // The adaptive limit on engines of unknown size only protects the first band: without
    // its traffic, lower bands go at once.
    const slowStart = this.firstBandActive(now);
    return saturation(this.table.forModel(this.model), this.cfg, now, this.staleAfterMs, { inTransit: this.inTransit, first: band === 0, slowStart, limit: this.limit.limit, gateMs: this.firstBandGateMs });
  }

  /**
   * Whether there is a first band to protect: a request of it in flight, or one admitted
   * within TOP_BAND_IDLE_MS. Only then are lower bands held to the adaptive limit and
   * prefill-paced; without it they would cost batch throughput and protect nobody (a
   * fleet whose clients set no band runs all of it as the default, lower, band).
   */
  firstBandActive(now: number): boolean {
    return this.topInflight > 0 || now - this.lastTopAt <= TOP_BAND_IDLE_MS;
  }

  /**
   * Why a request of `band` with a prompt of `promptTokens` arriving now must queue, or
   * null when it may go. `promptTokens`: the tokens to prefill where `paces` says so, else 0.
   */
  holdReason(band: number, now: number, promptTokens = 0): string | null {
    if (this.queue.waitingAhead(band, now)) return 'requests of its band or above are queued ahead';
    return this.saturated(now, band) ?? this.paceHold(band, promptTokens, now);
  }

  /**
   * A permit when the request may go now, else null (it must `wait`). The permit holds
   * the request's share of capacity until released. `seen`: how its first token is seen.
   */
  tryAdmit(band: number, now: number, promptTokens = 0, seen: FirstTokenSeen = 'streamed'): Permit | null {
    if (this.holdReason(band, now, promptTokens) !== null) return null;
    this.queue.admittedDirectly(band);
    if (band === 0) this.admittedTop(now);
    return this.permit(band, null, now, promptTokens, seen);
  }

  /**
   * Queues a request; resolves with a permit when it is released, null when `signal`
   * aborted first (the client left: it is out of the queue at once). Rejects with
   * LLMGW_QUEUE_FULL or LLMGW_QUEUE_TIMEOUT. A released request counts as load in
   * transit until its permit says it was `dispatched` (or is released).
   */
  wait(band: number, now: number, signal: AbortSignal, promptTokens = 0, seen: FirstTokenSeen = 'streamed'): Promise<Permit | null> {
    return this.enqueue(band, now, signal, promptTokens, seen, null);
  }

  /**
   * A request recalled from an engine (`makeWay`) waits again, ahead of the requests of
   * its band that were never admitted, and aged and timed as if it had queued now for as
   * long as it had queued before, not by the time it spent in the engine. Its permit's
   * hold ends once it is queued, so the capacity it frees may release it at once.
   * Resolves as `wait` does; the queue never sheds it.
   */
  rejoin(permit: Permit, signal: AbortSignal): Promise<Permit | null> {
    const now = Date.now();
    const back = this.enqueue(permit.band, now - permit.queuedMs, signal, permit.promptTokens, permit.seen, permit.since);
    permit.release(now);
    return back;
  }

  /**
   * A first-band request is about to be sent to `e`. Where it would find no free slot
   * there, the newest lower-band requests that can still be taken back (`recall.ts`) are
   * recalled: each attempt cancels its request at the engine and `rejoin`s the queue. So
   * are those sent before pacing began whose prompts would make it wait past the pacing
   * budget (`recallUnpacedPrefill`).
   * Not where the engine orders its own queue by priority. Returns how many were recalled.
   */
  makeWay(e: EndpointState, now: number): number {
    if (!this.cfg.recall || e.enginePriority !== null) return 0;
    return this.recallForSlot(e, now) + this.recallPrefill(e, now);
  }

  private recallForSlot(e: EndpointState, now: number): number {
    const n = recallCount(e);
    if (n === 0) return 0;
    // The newest; each rejoins in the order it first asked for admission (`rejoin`).
    let recalled = 0;
    for (const lease of e.recallable.slice(-n)) if (lease.recall(now)) recalled++;
    // An engine of unknown size that has run no more for a while is full at what it ran:
    // the limit that put more there is past its batch. One still running more each round
    // trip is filling up, and its recalls say only that it was not seen running more yet.
    // A probe of a learnt capacity that finds it so is over: left on, the requests
    // recalled went straight back into the probe's room, past their one recall, and the
    // next interactive requests waited behind them (traced in the admission bench, `vllm
    // short, speed 1` bronze-first: an engine of 16 probed to 19, first tokens of 75–118 ms).
    if (recalled > 0 && now - e.peakGrewAt >= PEAK_SETTLED_MS) {
      if (e.batchCapacity === null) this.limit.overfilled(e.peakRunning);
      else if (probing(e)) probeFoundFull(e, now);
    }
    return recalled;
  }

  private recallPrefill(e: EndpointState, now: number): number {
    if (!this.pacing.paces(1)) return 0;
    return recallUnpacedPrefill(e, pacingBudget(e, this.pacingLimits()), this.pacedSince, now);
  }

  private pacingLimits(): PacingLimits {
    return { tokens: this.cfg.prefill_tokens_per_replica, ms: this.cfg.prefill_ms_per_replica };
  }

  /** `firstAsked`: set for a recalled request rejoining, when it first asked for admission. */
  private enqueue(band: number, enqueuedAt: number, signal: AbortSignal, promptTokens: number, seen: FirstTokenSeen, firstAsked: number | null): Promise<Permit | null> {
    return new Promise<Permit | null>((resolve, reject) => {
      const onAbort = (): void => {
        if (this.queue.cancel(ticket)) resolve(null);
      };
      const ticket: Ticket = {
        band,
        enqueuedAt,
        promptTokens,
        ...(firstAsked === null ? {} : { firstAsked }),
        settle: (err: LlmgwError | null) => {
          signal.removeEventListener('abort', onAbort);
          if (err) return reject(err);
          this.inTransit++;
          const at = Date.now();
          if (band === 0) this.admittedTop(at);
          resolve(this.permit(band, enqueuedAt, at, promptTokens, seen, firstAsked ?? enqueuedAt));
        },
      };
      signal.addEventListener('abort', onAbort, { once: true });
      // The ticket itself, not a copy: `cancel` finds it by identity.
      if (ticket.firstAsked === undefined) this.queue.push(ticket);
      else this.queue.rejoin(ticket as Ticket & { firstAsked: number });
    });
  }

  /**
   * `queuedAt`: when the request (last) queued; null: it was admitted at once.
   * `firstAsked`: when it first asked for admission (before a recall sent it back).
   */
  private permit(band: number, queuedAt: number | null, now: number, promptTokens: number, seen: FirstTokenSeen, firstAsked = queuedAt ?? now): Permit {
    const permit = new Permit(this, band, queuedAt, now, firstAsked, promptTokens, this.startPrefill(band, promptTokens), seen);
    // Its first token unseen: its prefill is taken as done when a seen one's would be.
    // Before any was seen, it counts until its answer, which is then its first token.
    if (seen === 'whole' && permit.prefillTokens > 0 && this.streamedTtftMs !== null) this.unseen.push({ permit, doneAt: now + this.streamedTtftMs });
    return permit;
  }

  /** Gives back the prompt tokens of non-streamed requests whose prefill is taken as done by now. */
  private expireUnseen(now: number): void {
    const unseen = this.unseen;
    while (unseen.length > 0 && unseen[0]!.doneAt <= now) this.pacing.prefilled(unseen.shift()!.permit.takePrefill());
  }

  /** Why pacing holds a lower-band prompt back now, or null. A request not paced has no tokens to count. */
  private paceHold(band: number, promptTokens: number, now: number): string | null {
    if (promptTokens === 0 || !this.pacing.paces(band) || !this.firstBandActive(now)) return null;
    this.expireUnseen(now);
    const endpoints = this.table.forModel(this.model);
    const top = servingPriority(endpoints, now);
    const limits = this.pacingLimits();
    const gateMs = this.firstBandGateMs;
    let budget = 0;
    let replicas = 0;
    let room = false;
    for (const e of endpoints) {
      if (e.priority !== top || !usable(e, now)) continue;
      replicas++;
      // A prompt over a replica's budget still goes to one prefilling nothing: with the
      // sum of budgets alone, 1,650-token prompts under budgets of ~1,400 went one at a
      // time across two replicas (bronze 0.54 of off, admission bench `vllm long, speed 1`).
      budget += Math.max(pacingBudget(e, limits), promptTokens);
      room ||= !firstBandPrefilling(e, now, gateMs) && replicaHasRoom(e, promptTokens, limits);
    }
    // With no replica taking traffic for a moment (a breaker open), one replica's worth
    // still goes: the dispatcher answers what finds none. Otherwise the replicas' own
    // budgets, summed: the per-replica check below reads what was sent, and a release of
    // many queued requests admits them all before the first is sent. Held to a token
    // floor instead, one engine's 25 ms at 13 tokens a ms let a wave of 200 short
    // prompts through in one release (3,200 tokens, one ~240 ms step).
    const held = this.pacing.hold(promptTokens, replicas === 0 ? limits.tokens : budget);
    if (held !== null || room || replicas === 0) return held;
    // The sum has room but no one replica has (the scheduler would send it where the others' prefill waits).
    return `every replica clear of first-band prompts is prefilling lower-band prompts up to its budget`;
  }

  /** Counts a paced request's prompt as being prefilled; the tokens its permit gives back at its first token. */
  private startPrefill(band: number, promptTokens: number): number {
    if (promptTokens === 0 || !this.pacing.paces(band)) return 0;
    this.pacing.started(promptTokens);
    return promptTokens;
  }

  private admittedTop(now: number): void {
    // The adaptive limit starts to hold the lower bands from here (see `saturated`), at
    // what they hold that an engine was seen running: what waits inside one drains first.
    if (this.topInflight === 0 && now - this.lastTopAt > TOP_BAND_IDLE_MS) {
      const { most, ran } = serving(this.table.forModel(this.model), this.cfg.kv_ceiling, now);
      this.limit.engaged(Math.min(most, ran));
      this.pacedSince = now;
    }
    this.topInflight++;
    this.lastTopAt = now;
  }

  /** @internal Permit: a released request is now in flight; it counts through `inflight` from here. */
  endTransit(): void {
    if (this.inTransit > 0) this.inTransit--;
  }

  /**
   * @internal Permit: a request admitted at `admittedAt` had its first token now, seen
   * as it came. Only a streamed one is a full sample of the adaptive limit, whose
   * baseline is interactive traffic's: a batch job's long prompts, collected, read
   * against it as queueing. A collected one can only acknowledge: in slow start, or while
   * no first-band request is in flight to sample it (`adaptive-limit.ts`).
   */
  firstToken(admittedAt: number, now: number, seen: FirstTokenSeen): void {
    const ttft = now - admittedAt;
    const { replicas, most, lower, queueing } = serving(this.table.forModel(this.model), this.cfg.kv_ceiling, now);
    const share = 1 / Math.max(1, replicas);
    if (seen === 'streamed') this.limit.sample(ttft, admittedAt, now, most, this.lowerBandsQueued(), share, lower);
    // An engine seen queueing may be full whatever its other requests' first tokens say:
    // acknowledgements from those that got a slot would grow the limit past its batch.
    else if (!queueing) this.limit.acked(ttft, most, this.lowerBandsQueued(), share, this.topInflight === 0, now);
    this.streamedTtftMs = this.streamedTtftMs === null ? ttft : this.streamedTtftMs + (ttft - this.streamedTtftMs) * TTFT_SMOOTHING;
  }

  private lowerBandsQueued(): boolean {
    for (let band = 1; band < this.cfg.bands.length; band++) if (this.queue.depth(band) > 0) return true;
    return false;
  }

  /** @internal Permit: a paced request reached its first token (or ended before it): the next prefill may go. */
  prefilled(promptTokens: number, now: number): void {
    this.pacing.prefilled(promptTokens);
    this.release(now);
  }

  /** @internal Permit: an admitted request of `band` ended, whatever the ending; capacity may have freed. */
  finished(band: number, now: number): void {
    if (band === 0 && this.topInflight > 0) this.topInflight--;
    this.release(now);
  }

  /**
   * Releases queued requests while there is room; expires those past their timeout. What
   * still waits is held by an estimate of the engines that only a scrape moves on, so the
   * table is told to refresh it where one is due (`EndpointTable.touched`): its refreshes
   * otherwise follow the router's own traffic, and a queue held in front of engines of
   * unknown size lets none of it through. Traced in the admission bench's speed-1 short
   * cell scenario, such a flood sat at 4 per engine with its first scrape showing nothing
   * for 0.6 s, until the next poll, while the engines drained them.
   */
  release(now: number): void {
    this.expireUnseen(now);
    if (this.queue.length === 0) return;
    this.queue.expire(now);
    for (let band = this.queue.nextBand(now); band !== -1 && this.releasable(band, now); band = this.queue.nextBand(now)) {
      this.queue.next(now)!.settle(null);
    }
    if (this.queue.length > 0) for (const e of this.table.forModel(this.model)) this.table.touched(e, now);
  }

  /** Whether the head of `band` may go: by the rule of the band it has aged into, and prefill pacing by its own. */
  private releasable(band: number, now: number): boolean {
    return this.saturated(now, this.queue.headRank(band, now)) === null && this.paceHold(band, this.queue.headTokens(band), now) === null;
  }
}

/**
 * The replicas taking traffic, the most requests the router has in flight to one of them,
 * the most one was seen running (`peakRunning`), and whether any was last scraped
 * queueing (`queueing`).
 */
function serving(endpoints: readonly EndpointState[], kvCeiling: number, now: number): { replicas: number; most: number; lower: number; ran: number; queueing: boolean } {
  const top = servingPriority(endpoints, now);
  let replicas = 0;
  let most = 0;
  let lower = 0;
  let ran = 0;
  let seenQueueing = false;
  for (const e of endpoints) {
    if (e.priority !== top || !usable(e, now)) continue;
    replicas++;
    if (e.inflight > most) most = e.inflight;
    if (e.inflight - e.topInflight > lower) lower = e.inflight - e.topInflight;
    if (e.peakRunning > ran) ran = e.peakRunning;
    if (e.load !== null && queueing(e, kvCeiling)) seenQueueing = true;
  }
  return { replicas, most, lower, ran, queueing: seenQueueing };
}

/**
 * One admitted request's share of a model's capacity: the only handle on admission's
 * bookkeeping, so it cannot be left unbalanced. `dispatched` once the request counts in
 * an endpoint's in-flight (a request released from the queue is load in transit until
 * then); `firstToken` when its first token arrives (a paced prefill is done; for an
 * answer the engine sends whole, when all of it does, so it says nothing of the engine's
 * time to first token); `release` when it ends, whatever the ending. All are idempotent.
 */
export class Permit {
  private inTransit: boolean;
  private released = false;
  private answered = false;
  /** How long the request waited in the queue before it was admitted (0: it went at once). */
  readonly queuedMs: number;

  constructor(
    private readonly admission: Admission,
    readonly band: number,
    queuedAt: number | null,
    private readonly admittedAt: number,
    /** When the request first asked for admission. */
    readonly since: number,
    /** The prompt tokens the request was admitted with (0 where its band is not paced). */
    readonly promptTokens: number,
    /** Prompt tokens counted as being prefilled until the first token; 0 when not paced. */
    private prefilling: number,
    readonly seen: FirstTokenSeen,
  ) {
    this.inTransit = queuedAt !== null;
    this.queuedMs = queuedAt === null ? 0 : Math.max(0, admittedAt - queuedAt);
  }

  /** Prompt tokens still counted as being prefilled. */
  get prefillTokens(): number {
    return this.prefilling;
  }

  /** @internal Admission: the prefill is taken as done; the tokens it counted, to give back. */
  takePrefill(): number {
    const tokens = this.prefilling;
    this.prefilling = 0;
    return tokens;
  }

  dispatched(): void {
    if (!this.inTransit) return;
    this.inTransit = false;
    this.admission.endTransit();
  }

  firstToken(now: number): void {
    if (this.answered) return;
    this.answered = true;
    if (this.seen !== 'whole') this.admission.firstToken(this.admittedAt, now, this.seen);
    if (this.prefilling > 0) this.admission.prefilled(this.takePrefill(), now);
    // Lower bands held off its replica while it prefilled (`topPrefilling`) may go.
    else if (this.band === 0) this.admission.release(now);
  }

  release(now: number): void {
    if (this.released) return;
    this.released = true;
    this.dispatched();
    if (this.prefilling > 0) this.admission.prefilled(this.takePrefill(), now);
    this.admission.finished(this.band, now);
  }
}
