/** Where the limit starts, per replica: a few requests, as a new engine's size is unknown. */
const INITIAL = 4;
/** Multiplicative decrease on a slow first token. */
const BACKOFF = 0.8;
/**
 * A first token this many times the idle baseline, plus SLACK_MS, means requests queue
 * inside the engine. The slack absorbs the gateway host's own scheduling noise under a
 * flood, which otherwise reads as queueing and collapses the limit.
 */
const TOLERANCE = 2;
const SLACK_MS = 50;
/**
 * Slow first tokens in a row (each admitted after the last decrease) that mean queueing.
 * One alone was most often the host's moment: on 2 shared cores the interactive client's
 * p99 alone (84 ms) passed the threshold (~70 ms), and one slow sample in 40 cut a fifth
 * off, so the limit on an engine of 256 settled near 80–120 (traced, admission bench,
 * `batch 256 varied` platinum-first). A queue inside the engine delays every request
 * behind it, so it gives slow samples in a row.
 */
const SLOW_IN_A_ROW = 2;
/** Never above this many per replica. */
const MAX = 1024;
/** How far the baseline follows a slower sample: it must rise only if the engine really got slower. */
const BASELINE_DRIFT = 0.001;
/** The limit grows only while the router uses at least this share of it. */
const IN_USE = 0.5;
/**
 * What one collected first token adds in slow start, per replica: half a request, as a
 * TCP receiver delaying its acknowledgements grows the window 1.5× per round trip, not
 * 2×. A whole one overshot engines of 16 at a flood's onset (platinum-first flood p99
 * 29 ms against 23 ms, medians of five runs); half kept them within the noise (22–27 ms).
 */
const ACK_GROWTH = 0.5;

/**
 * How many requests the router may have in flight per replica before lower bands wait,
 * for engines whose batch size is neither configured nor learnt — learning needs two
 * scrapes in a row that show requests waiting, which a short poll-interval queue never
 * gives. AIMD over the router's own measurements, in the spirit of TCP congestion
 * control and adaptive concurrency limits: time to first token after admission, against
 * an idle baseline (the fastest seen, drifting slowly up). Fast: the limit grows, by one
 * per sample of the replica's own until the first cut (a slow start, doubling per round
 * trip), then by one per round trip (the baseline's time). Slow twice in a row
 * (queueing inside the engine; `SLOW_IN_A_ROW`): it shrinks by a fifth, once per round
 * trip — samples from requests admitted before the last decrease say nothing about the
 * new limit. It starts at INITIAL, or at what the lower bands already run when the first
 * band arrives (`engaged`).
 *
 * A fast sample says nothing of a limit that holds nothing back: it grows only while
 * lower-band requests wait in the router's queue and at least half of it is in use (as
 * TCP grows its window only while the window limits it, RFC 7661). The limit holds only
 * the lower bands, and an interactive client alone, whose own bursts keep half of it in
 * use, grew it past the engine's batch (to 17 for engines of 16, in an admission bench
 * run): a batch job arriving after it then filled every slot and queued behind them, and
 * the interactive requests of the next half second waited 200–500 ms inside the engines.
 */
export class AdaptiveLimit {
  private value = INITIAL;
  private baseline = Infinity;
  private slowStart = true;
  private lastDecreaseAt = -Infinity;
  private slowInARow = 0;
  private lastGrowthAt = -Infinity;

  get limit(): number {
    return Math.floor(this.value);
  }

  /** The idle baseline: the fastest first token seen, drifting slowly up (∞ before the first). */
  get idleTtftMs(): number {
    return this.baseline;
  }

  /**
   * A request admitted at `admittedAt` had its first token `ttftMs` later; `inUse`: the
   * most requests the router has in flight to one replica now; `held`: whether
   * lower-band requests wait in the router's queue now; `share`: one over the replicas
   * taking traffic; `lower`: the most lower-band requests in flight to one replica now.
   * A slow one with none in flight cuts nothing, nor ends slow start: the limit governs
   * only them, and what slowed the sample was not theirs (the host's moment, the
   * interactive client's own burst). Cut there, an interactive client alone before a
   * batch job ended slow start and held the limit at 2–4 when the job came, and it then
   * grew by one per round trip: 23–43 for an engine of 256 over the flood's first 4 s
   * (traced, admission bench, `batch 256 varied` platinum-first, bronze 0.38 of off).
   * In slow start a fast one grows the limit by `share`: the limit is per
   * replica, and a sample acknowledges only its own replica's requests. Grown by a whole
   * request per sample, two engines of 16 were allowed 26 each 0.4 s into a flood (the
   * interactive client's ~56 first tokens a second), 10 waited inside one, and the
   * interactive requests sent then waited 70–100 ms behind them (traced, admission bench,
   * `vllm short` platinum-first).
   */
  sample(ttftMs: number, admittedAt: number, now: number, inUse: number, held: boolean, share: number, lower: number): void {
    this.baseline = ttftMs < this.baseline ? ttftMs : this.baseline + (ttftMs - this.baseline) * BASELINE_DRIFT;
    if (ttftMs > this.baseline * TOLERANCE + SLACK_MS) {
      if (admittedAt <= this.lastDecreaseAt || lower === 0) return;
      if (++this.slowInARow < SLOW_IN_A_ROW) return;
      this.slowInARow = 0;
      this.slowStart = false;
      this.value = Math.max(1, this.value * BACKOFF);
      this.lastDecreaseAt = now;
      return;
    }
    this.slowInARow = 0;
    if (!held || inUse < this.value * IN_USE) return;
    if (this.slowStart) this.value = Math.min(MAX, this.value + share);
    else this.growPerRoundTrip(now);
  }

  /**
   * Past slow start, one more per round trip (the idle first token's time), counted in
   * time: first tokens are seen only for streamed requests, often a few among a batch
   * job's, and at one more per limit's worth of them a limit of 100 grew by one every
   * few seconds.
   */
  private growPerRoundTrip(now: number): void {
    const step = Math.min(1, (now - this.lastGrowthAt) / Math.max(1, this.baseline));
    this.lastGrowthAt = now;
    this.value = Math.min(MAX, this.value + step);
  }

  /**
   * A request whose answer the router collects (a batch job's usual shape) had its first
   * token `ttftMs` after admission; `share`: one over the replicas taking traffic, as the
   * limit is per replica and each replica's requests acknowledge only its own;
   * `firstBandIdle`: no first-band request is in flight. In slow start a fast one grows
   * the limit (by ACK_GROWTH) — TCP's window grows with each acknowledgement, and a batch
   * job's own requests are the bulk of what the limit governs: grown on the interactive
   * client's first tokens alone (~20 a second), the limit found ~100 of an engine's 256
   * slots in a 5 s flood, and held there after the last interactive request, as nothing
   * sampled it. Past slow start a fast one grows it by one per round trip, as a streamed
   * one does, but only while no first-band request is in flight: those are the samples
   * that judge it then. Without, the limit stood for the minute lower bands stay held
   * after the last first-band request (traced in the admission bench, `batch 256 varied`
   * platinum-first: 84 of 256 in flight for 15 s with nothing waiting in the engine,
   * bronze 0.54 of off). A slow one says nothing: a batch prompt may be long, and its
   * prefill reads against the interactive baseline as queueing (so neither does it
   * shrink the limit nor, past slow start, grow it: the interactive requests a queue
   * would delay are the ones that must say so).
   */
  acked(ttftMs: number, inUse: number, held: boolean, share: number, firstBandIdle: boolean, now: number): void {
    if (this.baseline === Infinity || ttftMs > this.baseline * TOLERANCE + SLACK_MS) return;
    if (!held || inUse < this.value * IN_USE) return;
    if (this.slowStart) this.value = Math.min(MAX, this.value + share * ACK_GROWTH);
    else if (firstBandIdle) this.growPerRoundTrip(now);
  }

  /**
   * A first-band request had to recall lower-band requests from a replica of unknown size
   * that has run no more for a while (`Admission.makeWay`): the router held more there
   * than the engine runs (`ran`), so the limit is past its batch, whatever the samples
   * say — recall keeps the first band's first tokens fast, and fast samples kept growing
   * it. Left there, the requests recalled went straight back to the same engine, past
   * their one recall, and the next interactive requests waited behind them: traced in
   * the admission bench's `vllm short` platinum-first, 34 in flight to an engine of 16,
   * none recallable, first tokens of 165–175 ms against twins of ~15.
   */
  overfilled(ran: number): void {
    this.value = Math.max(1, Math.min(this.value, ran));
  }

  /**
   * The first band arrives at engines the lower bands already fill, before any sample:
   * the limit starts at `running`, what a replica holds of the router's that its engine
   * was seen running, not below it. Started at INITIAL, it let no lower-band request go
   * until an engine of 256 had drained to 4 (a batch job running when the interactive
   * client starts, traced in the admission bench: no batch first token for 2 s). Not at
   * all the router holds there: what waits inside the engine is what an interactive
   * request would wait behind, and builds that started it there kept an engine of 256
   * refilled to its queue (bronze-first flood p99 ~1.1 s in three of four runs, against
   * one in four without). The first band's samples judge it from there.
   */
  engaged(running: number): void {
    if (this.baseline !== Infinity) return;
    this.value = Math.min(MAX, Math.max(this.value, running));
  }
}
