import type { BandConfig } from '../../config/types.js';
import { LlmgwError } from '../../errors.js';
import type { BandStats } from '../../messages/admission.js';

/** A request waiting for admission. `settle` is called exactly once. */
export interface Ticket {
  readonly band: number;
  readonly enqueuedAt: number;
  /** Estimated prompt tokens, for prefill pacing (0 where the band is not paced). */
  readonly promptTokens: number;
  /**
   * Set on a request admitted once and recalled from an engine (`rejoin`): when it first
   * asked for admission. Such requests go before the rest of their band, in that order,
   * and are never shed.
   */
  readonly firstAsked?: number;
  /** null: dispatch now; an error: answer the client with it. */
  settle(err: LlmgwError | null): void;
}

/**
 * The waiting room of one model: a FIFO per band, released highest band first. Strict
 * priority would let a steady platinum load starve bronze forever, so a request ages:
 * every `aging_ms` it has waited counts as one band higher. When the room is full the
 * lowest band is shed first (429); a request past its band's timeout gets a 503.
 */
export class AdmissionQueue {
  private readonly queues: Ticket[][];
  private readonly heads: number[];
  private readonly counts: Omit<BandStats, 'band' | 'queued'>[];
  private size = 0;

  constructor(
    readonly model: string,
    private readonly bands: readonly BandConfig[],
    private readonly agingMs: number,
    /** Most requests waiting across all bands. */
    private readonly maxQueued: number,
  ) {
    this.queues = bands.map(() => []);
    this.heads = bands.map(() => 0);
    this.counts = bands.map(() => ({ admitted: 0, shed: 0, timedOut: 0, cancelled: 0, recalled: 0 }));
  }

  get length(): number {
    return this.size;
  }

  /** Counts a request that went straight through, for the per-band stats. */
  admittedDirectly(band: number): void {
    this.counts[band]!.admitted++;
  }

  /**
   * Queues `t`. When its band's queue is full it is refused. When the whole room is full,
   * the newest request of the lowest band below `t`'s makes way; with none below, `t` is
   * refused: the lowest band is always shed first.
   */
  push(t: Ticket): void {
    const band = this.bands[t.band]!;
    if (this.depth(t.band) >= band.queue_limit) return this.shed(t, `the ${band.name} queue for '${this.model}' is full (${band.queue_limit} waiting)`);
    if (this.size >= this.maxQueued && !this.makeRoom(t.band)) return this.shed(t, `'${this.model}' has ${this.size} requests waiting for capacity, none of a lower band than ${band.name}`);
    this.queues[t.band]!.push(t);
    this.size++;
  }

  /**
   * Puts `t`, a request that was admitted and recalled from an engine
   * (`Admission.rejoin`), back at the head of its band, after any other rejoined request
   * that asked for admission before it. It was accepted once, so no limit sheds it now,
   * and it counts as admitted once, when released again.
   */
  rejoin(t: Ticket & { firstAsked: number }): void {
    const b = t.band;
    const q = this.queues[b]!;
    let at = this.heads[b]!;
    while (at < q.length && q[at]!.firstAsked !== undefined && q[at]!.firstAsked! <= t.firstAsked) at++;
    q.splice(at, 0, t);
    this.size++;
    this.counts[b]!.recalled++;
    this.counts[b]!.admitted--;
  }

  /** The band whose head goes next (aging counted), or -1 when none waits. */
  nextBand(now: number): number {
    if (this.size === 0) return -1;
    let best = -1;
    let bestRank = Infinity;
    for (let b = 0; b < this.queues.length; b++) {
      const head = this.queues[b]![this.heads[b]!];
      if (head === undefined) continue;
      const rank = b - Math.floor((now - head.enqueuedAt) / this.agingMs);
      if (rank < bestRank) {
        bestRank = rank;
        best = b;
      }
    }
    return best;
  }

  /**
   * The band the head of `band` counts as now that it has waited: it rises one band per
   * aging period, up to the first. Admission applies that band's rule to it, so a low
   * band is not held back forever by the room kept for the first.
   */
  headRank(band: number, now: number): number {
    const head = this.queues[band]![this.heads[band]!];
    return head === undefined ? band : Math.max(0, band - Math.floor((now - head.enqueuedAt) / this.agingMs));
  }

  /** The estimated prompt tokens of the head of `band` (0 when none waits). */
  headTokens(band: number): number {
    return this.queues[band]![this.heads[band]!]?.promptTokens ?? 0;
  }

  /** Whether a request waits that goes before a newcomer of `band` (same band, a higher one, or aged past it). */
  waitingAhead(band: number, now: number): boolean {
    if (this.size === 0) return false;
    for (let b = 0; b < this.queues.length; b++) {
      const head = this.queues[b]![this.heads[b]!];
      if (head !== undefined && b - Math.floor((now - head.enqueuedAt) / this.agingMs) <= band) return true;
    }
    return false;
  }

  /** Takes the next request to release, or undefined when none waits. */
  next(now: number): Ticket | undefined {
    const best = this.nextBand(now);
    if (best === -1) return undefined;
    const t = this.take(best);
    this.counts[t.band]!.admitted++;
    return t;
  }

  /** Removes a request whose client went away; false when it was no longer queued. */
  cancel(t: Ticket): boolean {
    const q = this.queues[t.band]!;
    const at = q.indexOf(t, this.heads[t.band]);
    if (at === -1) return false;
    q.splice(at, 1);
    this.size--;
    this.counts[t.band]!.cancelled++;
    return true;
  }

  /** Fails the requests that waited past their band's timeout. */
  expire(now: number): void {
    for (let b = 0; b < this.queues.length; b++) {
      const { name, queue_timeout_ms: limit } = this.bands[b]!;
      for (let head = this.queues[b]![this.heads[b]!]; head !== undefined && now - head.enqueuedAt >= limit; head = this.queues[b]![this.heads[b]!]) {
        this.take(b);
        this.counts[b]!.timedOut++;
        head.settle(new LlmgwError('LLMGW_QUEUE_TIMEOUT', `waited ${now - head.enqueuedAt} ms for capacity on '${this.model}' (${name} band limit ${limit} ms); the engines are saturated, retry later`));
      }
    }
  }

  /** Sheds the newest request of the lowest band below `band` that was never admitted; false when there is none. */
  private makeRoom(band: number): boolean {
    for (let b = this.queues.length - 1; b > band; b--) {
      const q = this.queues[b]!;
      let at = q.length - 1;
      while (at >= this.heads[b]! && q[at]!.firstAsked !== undefined) at--;
      if (at < this.heads[b]!) continue;
      const victim = q.splice(at, 1)[0]!;
      this.size--;
      this.shed(victim, `shed to make room for a ${this.bands[band]!.name} request: '${this.model}' is saturated`);
      return true;
    }
    return false;
  }

  stats(): BandStats[] {
    return this.bands.map((b, i) => ({ band: b.name, queued: this.depth(i), ...this.counts[i]! }));
  }

  /** How long the head of `band` has waited, ms; null when none waits. */
  oldestWait(band: number, now: number): number | null {
    const head = this.queues[band]![this.heads[band]!];
    return head === undefined ? null : now - head.enqueuedAt;
  }

  depth(band: number): number {
    return this.queues[band]!.length - this.heads[band]!;
  }

  /** Fails everything queued (shutdown). */
  drain(err: LlmgwError): void {
    for (let b = 0; b < this.queues.length; b++) while (this.depth(b) > 0) this.take(b).settle(err);
  }

  private shed(t: Ticket, why: string): void {
    this.counts[t.band]!.shed++;
    t.settle(new LlmgwError('LLMGW_QUEUE_FULL', `${why}; retry later`));
  }

  private take(b: number): Ticket {
    const q = this.queues[b]!;
    const t = q[this.heads[b]!]!;
    this.heads[b]!++;
    this.size--;
    // Compact now and then instead of shifting the array on every release.
    if (this.heads[b]! > 1024 && this.heads[b]! * 2 > q.length) {
      q.splice(0, this.heads[b]!);
      this.heads[b] = 0;
    }
    return t;
  }
}

