// Admission bound: the best any router could do for each cell of the admission matrix.
// The admission suite misses its platinum budget in every cell, and two causes are
// offered: the 2-core host (load generator, gateway and engines share the cores), or the
// engines — with long prompts a platinum request waits for the step in progress, then
// shares its own step with bronze prefill, and no router can take back what it sent. This
// suite takes the host out: the cell's engines (the sim's scheduler and step-time model at
// the cell's batch size, step budget and speed) on a manual clock, behind an oracle router
// that costs nothing, sees every engine exactly as it is and acts the instant a step ends.
// What it cannot reach, llmgw cannot either.
//
// Platinum (Poisson, PLATINUM_SHARE of the fleet's capacity, priority 0, no prompt cached)
// goes straight to the engine with the fewest requests. Bronze (a closed loop of
// FLOOD_FACTOR × the batch slots) waits in the oracle's queue and is released to an engine
// under one of two rules for its batch slots, each with P:
// - R, llmgw's rule (`reserved_share`; `freeSlots` in src/router/admission/saturation.ts):
//   bronze goes only while the engine holds fewer than slots − R requests of any band, so
//   R slots stay free however many platinum holds, and bronze's allowance shrinks while
//   platinum peaks. R = ceil(share × slots), the share swept from llmgw's 0.1 to 0.5.
// - K, a rule llmgw does not have: at most K bronze in flight per engine, whatever
//   platinum holds; swept from what R's default leaves bronze down to a quarter of the
//   batch.
// - P (`prefill_tokens_per_replica`): the most bronze prompt tokens admitted and still
//   without a first token per engine, which bounds the bronze prefill platinum can share a
//   step with. llmgw pools it over the replicas and does not pace an engine it knows to
//   have a step budget of at most P; the oracle keeps it per engine, always.
// Judged as the admission suite judges (platinum p99 TTFT within TTFT_BUDGET of its p99
// alone, bronze completions/s at least BRONZE_BUDGET of admission off's), over K × P and
// R × P, under the cell's policy and under `priority` (bronze 1), which the operator can
// choose. The verdict runs the setting of either rule with the widest margin again on
// fresh seeds: the lowest of dozens of noisy p99s flatters its setting. llmgw's defaults
// (R = ceil(0.1 × slots), P = 8192) are shown as the oracle executes them.
//
// Last measured (simulated time, so any machine gives the same figures): under llmgw's
// rule every cell meets both budgets (fresh seeds 1.02–1.43×, bronze 0.78–0.97). Under K
// the best settings (one seed each, so flattered) clear both with room only in `batch 256
// varied` (1.26–1.31×); `budget 2048` (1.48–1.49×) and `batch 64` under fcfs (1.48×)
// scrape by at bronze 0.70–0.71, and the rest miss (1.52–1.85×; 3.5–3.8× in `vllm short`,
// at bronze 0.75). R holds bronze back while platinum holds slots, when the bunches that
// make platinum's p99 arrive, so fewer of their steps carry a bronze prompt: at the
// allowance R's default leaves (R=2, K=14 of 16) `vllm long` gets 1.62× against 5.55×, and
// `vllm short` 1.01× at bronze 0.86 where K needs K=8 for 1.03× at 0.67. The 1.8–2.1× K
// leaves in `vllm long` at P=2048, once read as the engine's floor, is K's. Under R the
// engine's policy hardly matters: little waits inside an engine to be ordered.
// llmgw's defaults, executed perfectly, meet both in `vllm short`, `budget 2048`
// (1.14–1.24×, bronze 0.96) and `batch 256` (1.44×, 0.90–0.93); they miss in `vllm long`
// with or without chunking (1.65–1.69×), `batch 8 mixed` (1.55×; R=1 of 8) and `batch 64`
// (1.97×). P=2048, one long prompt at a time, brings the default R to 1.35–1.37× at bronze
// 0.96 in `vllm long`, with or without chunking; `batch 8` needs R=2 (1.33–1.48×, bronze
// 0.86), `batch 64` R=26–32 with P=2048 (1.39–1.45×, bronze 0.79–0.85).

import { BRONZE_BUDGET, CELLS, FLOOD_FACTOR, PLATINUM_SHARE, TTFT_BUDGET, type Cell } from './admission.js';
import { fmtNum, fmtRatio, printTable, type Suite, type TableRow } from './harness.js';
import { createRng, type Rng } from './load/rng.js';
import { distribution, type Distribution } from './load/stats.js';
import { ManualClock } from '../src/sim/clock.js';
import { SimEngine, type FinishReason, type SchedulingPolicy, type Sequence, type SubmitRequest } from '../src/sim/engine.js';

/** Simulated time before measuring: every engine holds a steady mix of bronze by then. */
const WARMUP_MS = 5_000;
/** Platinum samples wanted per run: the window lasts what they take, within these bounds. */
const PLATINUM_SAMPLES = 2_000;
const MIN_MEASURE_MS = 20_000;
const MAX_MEASURE_MS = 60_000;
/**
 * Platinum alone is measured over a longer window: its p99 comes from rare bunches of
 * arrivals and moved ±10% between seeds over 2,000 samples, while the flood's, set by
 * bronze, held within a few percent. Without bronze the simulation is cheap.
 */
const ALONE_MEASURE_MS = 300_000;
/** Simulated time over which the fleet's capacity is measured (as admission.ts does, here after the warm-up). */
const CAPACITY_MS = 20_000;
/** After the window, platinum measured in it still gets its first token; beyond this, something is stuck. */
const MAX_DRAIN_MS = 120_000;
/** llmgw's default `router.admission.reserved_share`: R's first value, and K's first is what it leaves bronze. */
const RESERVED_SHARE = 0.1;
/** R's sweep, as shares of the batch: llmgw's default up to half, past which bronze cannot keep its budget. */
const RESERVED_SHARES = [RESERVED_SHARE, 0.2, 0.3, 0.4, 0.5] as const;
/** llmgw's default `router.admission.prefill_tokens_per_replica`. */
const PREFILL_DEFAULT = 8192;
/** P's sweep; 1 lets one bronze prompt prefill at a time (a larger prompt still goes alone). */
const PREFILL_LIMITS = [Infinity, PREFILL_DEFAULT, 4096, 2048, 1] as const;
/** The best setting is run again on these seeds (× 100, + the shape's) to judge it. */
const RERUN_SEEDS = [1, 2, 3, 4] as const;
/** Bronze straight to the engines: admission off. */
const OFF: Limits = { family: 'K', n: Infinity, p: Infinity };

/**
 * How the oracle bounds the batch slots bronze may fill on an engine. K: at most n bronze
 * in flight, however many slots platinum holds. R, llmgw's rule: bronze goes only while
 * the engine holds fewer than slots − n requests of any band, so n slots stay free and
 * bronze's share shrinks while platinum peaks.
 */
type Family = 'K' | 'R';
const FAMILIES: readonly Family[] = ['K', 'R'];

/** Per engine: the slot rule and its n, and the most bronze prompt tokens admitted without a first token yet (P). */
interface Limits {
  family: Family;
  n: number;
  p: number;
}

const sameLimits = (a: Limits, b: Limits): boolean => a.family === b.family && a.n === b.n && a.p === b.p;

/** The most bronze an engine can hold under `limits`: what platinum leaves it under R is less. */
const bronzeCap = (limits: Limits, slots: number): number => (limits.family === 'K' ? limits.n : slots - limits.n);

/** The limits that let an engine hold at most `cap` bronze: the inverse of `bronzeCap`. */
const limitsFor = (family: Family, cap: number, p: number, slots: number): Limits => ({ family, n: family === 'K' ? cap : slots - cap, p });

/** llmgw's defaults, for the summary: what they reach executed perfectly. */
const llmgwDefaults = (slots: number): Limits => ({ family: 'R', n: Math.ceil(slots * RESERVED_SHARE), p: PREFILL_DEFAULT });

interface Run {
  cell: Cell;
  policy: SchedulingPolicy;
  /** Platinum arrivals per simulated second; 0: none. */
  platinumRate: number;
  /** Bronze kept outstanding, and how the oracle releases it; null: no bronze. */
  bronze: { outstanding: number; limits: Limits } | null;
  measureMs: number;
}

interface Outcome {
  /** Platinum TTFT (ms) of requests arriving in the measuring window. */
  ttft: Distribution;
  /** Bronze completions per simulated second in the window. */
  bronzeRps: number;
}

interface Setting {
  limits: Limits;
  outcome: Outcome;
}

/** One engine shape under one scheduling policy, for every cell that has that shape. */
interface Row extends Baselines {
  cells: Cell[];
  policy: SchedulingPolicy;
  platinumRate: number;
  settings: Setting[];
  /** Per rule, the lowest platinum ratio among its settings that keep bronze within its budget. */
  best: Record<Family, Setting | undefined>;
  /** llmgw's defaults, from the sweep. */
  defaults: Setting;
  /** The setting of either rule with the widest margin over both budgets (or the narrowest miss), judged again on fresh seeds. */
  judged: Setting;
  reruns: Outcome[];
}

interface Baselines {
  alone: Distribution;
  off: Outcome;
}

export const suite: Suite = {
  name: 'admission-bound',
  description: `what an oracle router could reach per admission cell: platinum p99 TTFT ratio vs bronze throughput over llmgw's R × P knobs and an alternative K × P, on simulated engines without a host`,
  async run() {
    // BENCH_ADMISSION_CELLS=long,batch runs only the cells whose names contain one of the words, as for `admission`.
    const only = process.env.BENCH_ADMISSION_CELLS?.split(',').filter((w) => w !== '');
    const cells = CELLS.filter((c) => !only || only.some((w) => c.name.includes(w)));
    const rows: Row[] = [];
    for (const [seed, group] of [...groupByShape(cells).values()].entries()) {
      const t0 = performance.now();
      const platinumRate = PLATINUM_SHARE * fleetCapacity(group[0]!);
      // Every cell runs under its own policy and under `priority`; one that already orders by priority has nothing to force.
      for (const policy of ['fcfs', 'priority'] as const) {
        if (policy === 'priority' || group.some((c) => policyOf(c) === 'fcfs')) rows.push(sweep(group, policy, platinumRate, seed));
      }
      console.log(`  ${group.map((c) => c.name).join(' = ')}: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    }
    printGrid(rows);
    printSummary(cells, rows);
  },
};

const policyOf = (cell: Cell): SchedulingPolicy => cell.sim.schedulingPolicy ?? 'fcfs';

/**
 * Cells the oracle cannot tell apart: gauge timing, flavor, what llmgw is told and the
 * engines' own policy are not part of the shape (the policy is swept), so e.g. `vllm long`
 * and `live gauges long` are one problem, simulated once.
 */
function shapeOf(cell: Cell): string {
  const { engines, prompt, maxTokens, sim } = cell;
  return JSON.stringify([engines, sim.maxNumSeqs, sim.maxNumBatchedTokens ?? null, sim.speed, prompt, maxTokens]);
}

function groupByShape(cells: readonly Cell[]): Map<string, Cell[]> {
  const groups = new Map<string, Cell[]>();
  for (const c of cells) groups.set(shapeOf(c), [...(groups.get(shapeOf(c)) ?? []), c]);
  return groups;
}

/**
 * Bronze completions/s of the cell's fleet with every slot busy: the platinum rate is a
 * share of it. Under fcfs: among requests of one priority the policies schedule alike.
 */
function fleetCapacity(cell: Cell): number {
  const bronze = { outstanding: 2 * cell.engines * cell.sim.maxNumSeqs, limits: OFF };
  return simulate({ cell, policy: 'fcfs', platinumRate: 0, bronze, measureMs: CAPACITY_MS }, 0).bronzeRps;
}

/**
 * One shape under one engine policy: the baselines, every K × P and R × P, then for each
 * rule and P the bronze allowance between two tried ones where bronze crosses its budget,
 * by bisection: where the batch is small a slot either way decides. The same seed
 * everywhere, so every run sees the same platinum.
 */
function sweep(cells: Cell[], policy: SchedulingPolicy, platinumRate: number, seed: number): Row {
  const cell = cells[0]!;
  const slots = cell.sim.maxNumSeqs;
  const measureMs = Math.min(MAX_MEASURE_MS, Math.max(MIN_MEASURE_MS, (1000 * PLATINUM_SAMPLES) / platinumRate));
  const outstanding = FLOOD_FACTOR * cell.engines * slots;
  const alone = simulate({ cell, policy, platinumRate, bronze: null, measureMs: ALONE_MEASURE_MS }, seed).ttft;
  const off = simulate({ cell, policy, platinumRate, bronze: { outstanding, limits: OFF }, measureMs }, seed);
  const settings: Setting[] = [];
  const at = (limits: Limits): Outcome => {
    const known = settings.find((s) => sameLimits(s.limits, limits));
    if (known) return known.outcome;
    // Limits that release bronze exactly as tried ones do would repeat their run on the same seed: reuse it.
    const twin = settings.find((s) => sameLimits(canonical(s.limits, cell), canonical(limits, cell)));
    const outcome = twin?.outcome ?? simulate({ cell, policy, platinumRate, bronze: { outstanding, limits }, measureMs }, seed);
    settings.push({ limits, outcome });
    return outcome;
  };
  for (const family of FAMILIES) {
    for (const n of family === 'K' ? bronzeSlotLimits(slots) : reservedSlots(slots)) for (const p of PREFILL_LIMITS) at({ family, n, p });
    for (const p of PREFILL_LIMITS) {
      const within = (cap: number): boolean => at(limitsFor(family, cap, p, slots)).bronzeRps >= BRONZE_BUDGET * off.bronzeRps;
      const tried = settings.filter((s) => s.limits.family === family && s.limits.p === p).map((s) => bronzeCap(s.limits, slots));
      let hi = Math.min(...tried.filter(within));
      let lo = Math.max(...tried.filter((cap) => cap < hi));
      while (Number.isFinite(hi) && Number.isFinite(lo) && hi - lo > 1) {
        const mid = Math.floor((lo + hi) / 2);
        if (within(mid)) hi = mid;
        else lo = mid;
      }
    }
  }
  // The lowest of dozens of noisy p99s flatters its setting, and the bisection leaves the
  // best one on bronze's budget exactly: the verdict is the widest-margin setting's, on
  // seeds that played no part in choosing it. The baselines, long-run figures that moved
  // about 1% between seeds, are kept.
  const base = { alone, off };
  const judged = settings.reduce((j, s) => (margin(base, s.outcome) > margin(base, j.outcome) ? s : j));
  const reruns = RERUN_SEEDS.map((s) => simulate({ cell, policy, platinumRate, bronze: { outstanding, limits: judged.limits }, measureMs }, 100 * s + seed));
  const best = { K: bestOf(base, settings.filter((s) => s.limits.family === 'K')), R: bestOf(base, settings.filter((s) => s.limits.family === 'R')) };
  const defaults = settings.find((s) => sameLimits(s.limits, llmgwDefaults(slots)))!;
  return { cells, policy, platinumRate, alone, off, settings, best, defaults, judged, reruns };
}

/**
 * One form for all limits that release bronze alike on `cell`: a P that the most bronze an
 * engine can hold, all of the longest prompt, cannot reach is ∞; one that no two of the
 * shortest prompts fit is 1, one prompt at a time (P=2048 where prompts are long).
 */
function canonical(limits: Limits, cell: Cell): Limits {
  if (limits.p >= bronzeCap(limits, cell.sim.maxNumSeqs) * cell.prompt[1]) return { ...limits, p: Infinity };
  if (limits.p < 2 * cell.prompt[0]) return { ...limits, p: 1 };
  return limits;
}

/** K's sweep: what llmgw's default reserve leaves bronze, as R's first value does, then ¾ down to ¼ of the batch in eighths. */
function bronzeSlotLimits(slots: number): number[] {
  const room = slots - Math.ceil(slots * RESERVED_SHARE);
  return [...new Set([room, ...[6, 5, 4, 3, 2].map((eighths) => Math.max(1, Math.ceil((slots * eighths) / 8)))])].sort((a, b) => b - a);
}

/** R's sweep: the slots each share of RESERVED_SHARES keeps free, rounded up as llmgw does. */
function reservedSlots(slots: number): number[] {
  return [...new Set(RESERVED_SHARES.map((share) => Math.ceil(slots * share)))];
}

/** One run on a manual clock: platinum and the oracle's bronze over the cell's engines, warm-up, window, then platinum's drain. */
function simulate(run: Run, seed: number): Outcome {
  const clock = new ManualClock(0);
  const { cell } = run;
  const { maxNumSeqs, maxNumBatchedTokens, speed } = cell.sim;
  // No prompt shares a block with another, so the prefix cache could never hit: without it
  // the engines schedule the same steps, and the suite does not spend half its time hashing.
  const engines = Array.from({ length: cell.engines }, () => new SimEngine({ clock, maxNumSeqs, maxNumBatchedTokens, speed, schedulingPolicy: run.policy, enablePrefixCaching: false }));
  const endMs = WARMUP_MS + run.measureMs;
  const requests = new Requests(cell, run.policy);
  const bronze = run.bronze && new BronzeOracle(engines, requests, createRng(2000 + seed), run.bronze.limits, run.bronze.outstanding, endMs);
  // A platinum request finishing frees a slot R counts, so the oracle looks again.
  const platinumDone = (): void => bronze?.release();
  const platinum = run.platinumRate > 0 ? startPlatinum(clock, engines, requests, createRng(1000 + seed), run.platinumRate, endMs, platinumDone) : { ttft: [], pending: 0 };
  clock.advance(endMs);
  for (let drained = 0; platinum.pending > 0; drained += 1_000) {
    if (drained >= MAX_DRAIN_MS) throw new Error(`${cell.name}: platinum without a first token ${MAX_DRAIN_MS / 1000} s after the window`);
    clock.advance(1_000);
  }
  for (const e of engines) e.close();
  return { ttft: distribution(platinum.ttft), bronzeRps: ((bronze?.done ?? 0) * 1000) / run.measureMs };
}

/** Requests of the cell's shape. Every prompt starts with its own token, so none shares a KV block with another. */
class Requests {
  private next = 0;
  /** Token ids 0…longest prompt: copying a slice is far cheaper than building each prompt. */
  private readonly template: number[];

  constructor(
    private readonly cell: Cell,
    private readonly policy: SchedulingPolicy,
  ) {
    this.template = [...Array(cell.prompt[1]).keys()];
  }

  /** `urgency`: the request's priority where the engines order by it (lower first); fcfs engines refuse any other than 0. */
  make(rng: Rng, urgency: number, handlers: Pick<SubmitRequest, 'onToken' | 'onFinish'>): SubmitRequest {
    const id = this.next++;
    const prompt = this.template.slice(0, rng.int(this.cell.prompt[0], this.cell.prompt[1]));
    prompt[0] = -1 - id;
    return {
      id: String(id),
      promptTokenIds: prompt,
      outputTokenIds: new Array<number>(rng.int(this.cell.maxTokens[0], this.cell.maxTokens[1])).fill(1),
      finishReason: 'length',
      priority: this.policy === 'priority' ? urgency : 0,
      ...handlers,
    };
  }
}

/** Platinum TTFTs (ms) of requests arriving after the warm-up, and how many of those still wait for a first token. */
interface PlatinumLog {
  ttft: number[];
  pending: number;
}

/** Poisson platinum until `endMs`, each to the engine with the fewest requests in it; `onFinish` as each one ends. */
function startPlatinum(clock: ManualClock, engines: readonly SimEngine[], requests: Requests, rng: Rng, rate: number, endMs: number, onFinish: () => void): PlatinumLog {
  const log: PlatinumLog = { ttft: [], pending: 0 };
  const arrive = (): void => {
    const measured = clock.now() >= WARMUP_MS;
    if (measured) log.pending++;
    const onToken = (seq: Sequence, index: number): void => {
      if (index > 0 || !measured) return;
      log.ttft.push(seq.firstTokenMs - seq.arrivalMs);
      log.pending--;
    };
    const finished = (_: Sequence, reason: FinishReason): void => {
      if (reason !== 'abort') onFinish(); // not the engines closing at the end
    };
    leastLoaded(engines).submit(requests.make(rng, 0, { onToken, onFinish: finished }));
    next();
  };
  // One timer at a time: ManualClock scans all of its timers for each one it fires.
  const next = (): void => {
    const gap = rng.exp(1000 / rate);
    if (clock.now() + gap < endMs) clock.schedule(arrive, gap);
  };
  next();
  return log;
}

function leastLoaded(engines: readonly SimEngine[]): SimEngine {
  let best = engines[0]!;
  for (const e of engines) if (e.numRunning + e.numWaiting < best.numRunning + best.numWaiting) best = e;
  return best;
}

/** Bronze the oracle has on one engine. */
interface Held {
  inFlight: number;
  /** Prompt tokens of the bronze among them without a first token yet. */
  prefilling: number;
}

/**
 * The oracle's bronze: a closed loop of `outstanding` requests (one replaced the moment it
 * finishes) held in the oracle's queue and released to an engine when that engine's
 * limits allow. What the limits count changes only when a request gets its first token
 * or finishes, and both happen as a step ends, before the engine schedules the next: a
 * release there joins that very next step, as no real router's could.
 */
class BronzeOracle {
  /** Bronze completed within the window. */
  done = 0;
  private readonly held: Map<SimEngine, Held>;
  private readonly placed = new Map<Sequence, Held>();
  private queued: number;
  /** The head of the queue, drawn ahead because P's check needs its prompt length. */
  private head: SubmitRequest;

  constructor(
    private readonly engines: readonly SimEngine[],
    private readonly requests: Requests,
    private readonly rng: Rng,
    private readonly limits: Limits,
    outstanding: number,
    private readonly endMs: number,
  ) {
    this.held = new Map(engines.map((e) => [e, { inFlight: 0, prefilling: 0 }]));
    this.queued = outstanding;
    this.head = this.draw();
    this.release();
  }

  private draw(): SubmitRequest {
    return this.requests.make(this.rng, 1, {
      onToken: (seq, index) => {
        if (index > 0) return;
        this.placed.get(seq)!.prefilling -= seq.numPromptTokens;
        this.release();
      },
      onFinish: (seq, reason) => {
        if (reason === 'abort') return; // the engines closing at the end
        this.placed.get(seq)!.inFlight--;
        this.placed.delete(seq);
        if (seq.finishedMs >= WARMUP_MS && seq.finishedMs <= this.endMs) this.done++;
        this.queued++;
        this.release();
      },
    });
  }

  /** Releases the queue's head while some engine's limits allow it, to the one with the fewest requests among those. */
  release(): void {
    while (this.queued > 0) {
      const prompt = this.head.promptTokenIds.length;
      const open = this.engines.filter((e) => this.admits(e, prompt));
      if (open.length === 0) return;
      const engine = leastLoaded(open);
      const held = this.held.get(engine)!;
      held.inFlight++;
      held.prefilling += prompt;
      this.queued--;
      this.placed.set(engine.submit(this.head), held);
      this.head = this.draw();
    }
  }

  private admits(engine: SimEngine, prompt: number): boolean {
    const held = this.held.get(engine)!;
    const { family, n, p } = this.limits;
    const slot = family === 'K' ? held.inFlight < n : engine.numRunning + engine.numWaiting < engine.maxNumSeqs - n;
    return slot && (held.prefilling === 0 || held.prefilling + prompt <= p);
  }
}

// ---- judging and printing ----------------------------------------------------------------

const ratioOf = (base: Baselines, o: Outcome): number => o.ttft.p99 / base.alone.p99;
const bronzeOf = (base: Baselines, o: Outcome): number => o.bronzeRps / base.off.bronzeRps;
/** How far a setting clears both budgets: ≥ 1 meets them, and the larger the safer. */
const margin = (base: Baselines, o: Outcome): number => Math.min(TTFT_BUDGET / ratioOf(base, o), bronzeOf(base, o) / BRONZE_BUDGET);
const meetsBoth = (base: Baselines, o: Outcome): boolean => margin(base, o) >= 1;
/** Two decimals: the verdicts sit near 1.5×. */
const fmtTimes = (x: number): string => (x < 10 ? `${x.toFixed(2)}×` : fmtRatio(x));
const pText = (p: number): string => (p === Infinity ? '∞' : p === 1 ? '1 prompt' : String(p));

/** The lowest platinum ratio among settings that keep bronze within its budget. */
function bestOf(base: Baselines, settings: readonly Setting[]): Setting | undefined {
  const within = settings.filter((s) => bronzeOf(base, s.outcome) >= BRONZE_BUDGET);
  return within.reduce<Setting | undefined>((b, s) => (b === undefined || ratioOf(base, s.outcome) < ratioOf(base, b.outcome) ? s : b), undefined);
}

/** ✓ where the judged setting meets both budgets on every fresh seed, ✗ on none, else on how many. */
function verdict(row: Row): string {
  const met = row.reruns.filter((o) => meetsBoth(row, o)).length;
  return met === 0 ? '✗' : met === row.reruns.length ? '✓' : `edge: ${met} of ${row.reruns.length}`;
}

const span = (xs: readonly number[], fmt: (x: number) => string): string => `${fmt(Math.min(...xs))}–${fmt(Math.max(...xs))}`;
const limitsText = (l: Limits): string => `${l.family}=${l.n} P=${pText(l.p)}`;
/** ×p99, then the bronze ratio, ✓ where both budgets are met. */
const outcomeText = (base: Baselines, o: Outcome): string => `${fmtTimes(ratioOf(base, o))} ${bronzeOf(base, o).toFixed(2)}${meetsBoth(base, o) ? ' ✓' : ''}`;
const settingText = (base: Baselines, s: Setting | undefined): string => (s ? `${outcomeText(base, s.outcome)} at ${limitsText(s.limits)}` : 'none');

/** Per shape and policy, a block per rule, one line per K or R tried: ×p99 and bronze ratio under each P. */
function printGrid(rows: readonly Row[]): void {
  console.log('');
  const out: TableRow[] = [];
  for (const row of rows) {
    const c = row.cells[0]!;
    const budget = c.sim.maxNumBatchedTokens === 0 ? 'no step budget' : `step budget ${c.sim.maxNumBatchedTokens ?? 8192}`;
    out.push({
      section: `${row.cells.map((x) => x.name).join(' = ')} — ${row.policy}; ${c.engines}×${c.sim.maxNumSeqs}, ${budget}, speed ${c.sim.speed}; alone p99 ${fmtNum(row.alone.p99)} ms; off ×p99 ${fmtRatio(ratioOf(row, row.off))}`,
    });
    for (const family of FAMILIES) {
      const own = row.settings.filter((s) => s.limits.family === family);
      // Most bronze first in both blocks: K descending, R ascending.
      const ns = [...new Set(own.map((s) => s.limits.n))].sort((a, b) => (family === 'K' ? b - a : a - b));
      for (const n of ns) {
        const entries = PREFILL_LIMITS.map((p) => {
          const s = own.find((x) => x.limits.n === n && x.limits.p === p);
          return s ? outcomeText(row, s.outcome) : '';
        });
        const isDefault = family === 'R' && n === row.defaults.limits.n;
        out.push([`  ${family}=${n}${isDefault ? ' (default)' : ''}`, ...entries]);
      }
    }
  }
  printTable(['bronze per engine', ...PREFILL_LIMITS.map((p) => `P=${pText(p)}`)], out);
  console.log(
    [
      `Each entry: platinum p99 TTFT over its p99 alone (budget ≤ ${TTFT_BUDGET}×), then bronze completions/s over admission off's (budget ≥ ${BRONZE_BUDGET}); ✓ meets both.`,
      'K: most bronze in flight per engine, a rule llmgw does not have. R: slots kept free per engine, bronze going only while the engine holds fewer than slots − R requests of any band,',
      `llmgw's rule (\`reserved_share\`; default: R = ceil(${RESERVED_SHARE} × slots)). P: most bronze prompt tokens admitted and still without a first token per engine (1 prompt: one at a time).`,
      'Rows with gaps: the K or R, per P, where bronze crosses its budget. A P that the most bronze an engine can hold, of the longest prompt, cannot reach repeats the P=∞ run; one no two prompts fit, the 1-prompt run.',
      'Cells joined by = differ only where the oracle does not look (gauges, flavor, what llmgw is told).',
    ].join('\n'),
  );
}

/** Per cell: its own policy and, for an fcfs cell, with engine priority; the baselines, the best setting of each rule within bronze's budget, llmgw's defaults and the verdict. */
function printSummary(cells: readonly Cell[], rows: readonly Row[]): void {
  console.log('');
  const out: TableRow[] = [];
  for (const cell of cells) {
    for (const row of rows.filter((r) => r.cells.includes(cell) && (r.policy === policyOf(cell) || r.policy === 'priority'))) {
      out.push([
        `${cell.name}${row.policy === policyOf(cell) ? '' : ', with engine priority'}`,
        fmtNum(row.platinumRate),
        String(row.alone.n),
        fmtNum(row.alone.p50),
        fmtNum(row.alone.p99),
        fmtRatio(ratioOf(row, row.off)),
        fmtNum(row.off.bronzeRps),
        settingText(row, row.best.K),
        settingText(row, row.best.R),
        settingText(row, row.defaults),
        limitsText(row.judged.limits),
        span(row.reruns.map((o) => ratioOf(row, o)), fmtTimes),
        span(row.reruns.map((o) => bronzeOf(row, o)), (x) => x.toFixed(2)),
        verdict(row),
      ]);
    }
  }
  printTable(
    ['cell', 'plat req/s', 'alone n', 'alone p50', 'alone p99', 'off ×p99', 'off bronze req/s', 'best with K', 'best with R', "llmgw's defaults", 'judged at', `×p99 on ${RERUN_SEEDS.length} fresh seeds`, 'bronze there', 'both budgets'],
    out,
  );
  console.log(
    [
      `TTFT in simulated ms at the cell's speed, engine-side (arrival to first token), over platinum arriving after ${WARMUP_MS / 1000} s of warm-up: in a window sized for ${PLATINUM_SAMPLES} samples (${MIN_MEASURE_MS / 1000}–${MAX_MEASURE_MS / 1000} s), alone in ${ALONE_MEASURE_MS / 1000} s.`,
      `off ×p99: bronze straight to the engines, no limits. best with K / R: ×p99 and bronze ratio of the lowest platinum ratio among that rule's settings that keep bronze ≥ ${BRONZE_BUDGET} (✓: meets both budgets).`,
      `llmgw's defaults: R = ceil(${RESERVED_SHARE} × slots), P = ${PREFILL_DEFAULT}, executed perfectly; one setting fixed beforehand, so its single seed flatters nothing.`,
      'judged at: the setting of either rule that clears both budgets by the widest margin (or misses by the least), run again on fresh platinum and bronze draws, since the lowest of many noisy p99s flatters its setting;',
      'both budgets judges those runs: ✓ all meet both, ✗ none does, edge: some.',
    ].join('\n'),
  );
}
