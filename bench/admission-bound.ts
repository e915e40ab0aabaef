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
//   step with. llmgw keeps it per engine too (and at twice an engine's own step budget
//   where that is less); the oracle keeps it at P, always.
// Judged as the admission suite judges (platinum p99 TTFT within TTFT_BUDGET of its p99
// alone, bronze completions/s at least BRONZE_BUDGET of admission off's), over K × P and
// R × P, under the cell's policy and under `priority` (bronze 1), which the operator can
// choose. The verdict runs the setting of either rule with the widest margin again on
// fresh seeds: the lowest of dozens of noisy p99s flatters its setting. llmgw's defaults
// (R = ceil(0.1 × slots), P = 4096 and the gate below) are shown as the oracle executes them.
//
// BENCH_BOUND_LATENCY_MS=0,0.5,1,2,4 runs instead llmgw's rule R × P with the oracle
// reacting as a router across a network does: it hears of bronze first tokens and finishes
// L ms late, and bronze it releases reaches the engine L ms later (platinum as before).
// With it, at P=2048: `sched`, a prompt counted against P only until the engine takes it
// into a step, so the next travels while it prefills; `held`, bronze decided again just
// before the step it would join. BENCH_BOUND_CELLS='vllm long' (exact names, `;` between)
// runs one shape without its twins.
//
// Last measured (simulated time, so any machine gives the same figures), first with the
// oracle reacting at no latency, which flatters R (see the latency paragraph): under llmgw's
// rule every cell meets both budgets on fresh seeds (1.01–1.44×, bronze 0.79–0.98) but
// two at the edge, three seeds of four meeting both: `batch 8 mixed` (R=2, P=2048:
// 1.36–1.51×, bronze 0.84–0.86) and `host-bound short` (R=71, P=∞: 1.36–1.50×, bronze
// 0.71; the run before, R=73 at P=2048, 1.23–1.56×). Under K the best settings (one seed
// each, so flattered) clear both only at an edge: `batch 256 varied` (1.36×, bronze 0.70),
// `budget 2048` (1.45–1.48×, 0.71), the long cells under priority (1.46×) and `batch 8`
// under priority (1.49×); the rest miss (1.52–1.93×; 3.5–5.3× in `vllm short`, at bronze
// 0.75). R holds bronze back while platinum holds slots, when the bunches that
// make platinum's p99 arrive, so fewer of their steps carry a bronze prompt: at the
// allowance R's default leaves (R=2, K=14 of 16) `vllm long` gets 1.74× against 6.07× at P=∞, and
// `vllm short` 1.01× at bronze 0.86 where K needs K=8 for 1.03× at 0.67. The 1.8–2.1× K
// leaves in `vllm long` at P=2048, once read as the engine's floor, is K's. Under R the
// engine's policy hardly matters: little waits inside an engine to be ordered.
// llmgw's defaults, executed perfectly, with the gate below (twice platinum's p50 alone)
// and P=4096 (8192 and paced at twice an engine's step budget before): they meet both in
// `vllm short`, `budget 2048` (1.27×, bronze 0.96), the `vllm long` shapes at either speed,
// with or without chunking (1.37–1.41×, 0.96), `batch 8 mixed` (1.44×, 0.94; 1.58× at
// 8192) and `batch 256` (1.48×, 0.88–0.92); they miss in `batch 64` (1.53×; 1.88× at 8192)
// and `host-bound short` (3.56×). Ungated, P=2048, one long prompt at a time, brings the
// default R to 1.35–1.37× at bronze 0.96 in `vllm long`, with or without chunking; `batch
// 8` needs R=2 (1.33–1.48×, bronze 0.86), `batch 64` R=26–32 with P=2048 (1.39–1.45×,
// bronze 0.79–0.85).
//
// With latency (`vllm long`, fcfs, R=2): bronze at P=2048 falls 0.96 → 0.94, 0.88, 0.81,
// 0.65 at L = 0.5, 1, 2, 4 ms, not to half by 1–2 ms: a prompt that misses a step waits
// for a decode step (~1.5 ms at speed 4), not a prefill step (~8.6 ms), and only the 8 ms
// round trip of L=4 costs nearly one. Platinum suffers more: 1.35× → 1.53–1.78× at
// P=2048, and at larger P with any latency at all (1 µs will do at P=∞): 1.66× → 2.0–2.6×
// at 4096, 1.69× → 3.2–4.1× at 8192, as llmgw measured at its defaults (5.3–5.5×), 1.62×
// → 5.5–7.2× at ∞. Without latency R shields platinum as a side effect of bronze sitting
// at its cap: a platinum waiting for the next step lifts the count R reads at the very
// instant that step is filled, so no bronze prompt joins it (1% of platinum's steps in a
// trace); with latency refills lag, bronze runs below its cap and prompts join platinum's
// steps (18% at L=1). `sched` restores bronze (0.90–0.95 at every L) but costs platinum
// (1.9–2.7×); `sched held` meets both at L=0.5 (1.45×, 0.94) and not from 1 ms (2.3–2.5×,
// 1.9–2.5× at the best R; 66% of platinum's steps get a prompt at L=1). No release timing
// restores R's shield: that needs a rule that keeps bronze prompts out of a step platinum
// waits for.
//
// That rule, a gate, is llmgw's since (`firstBandPrefilling`): no bronze released to an
// engine while platinum sent there waits for a first token the oracle has heard of, for at
// most G after each platinum send. In `vllm long`, R of 2–8, L = 0.5–2 ms, at P=8192 it
// helps little (2.7–3.2× against 3.0–3.8×): bronze admitted before platinum came still
// prefills in the steps platinum waits behind. With one long prompt at a time (P=2048) it
// meets both budgets: gated until the first token 1.35–1.47× at bronze 0.72–0.94 (R ≤ 7),
// with G twice platinum's p50 alone 1.38–1.54×, with G the p50 1.41–1.73× (the gate opens
// before platinum's step has begun), where P=2048 ungated gives 1.47–1.77× from 1 ms.
// At llmgw's P=4096 gated, the latency costs it: 1.80–2.04× at bronze 0.92–0.95 for L =
// 0.5–2 ms (R=2; 1.76–1.90× at the best R), where P=2048 gated reads 1.39–1.46× at bronze
// 0.94, 0.84 and 0.74: one long prompt at a time is what holds platinum where the router
// reacts within a fraction of a step, and costs bronze where it does not.
// `vllm long, no chunking` reads alike; `batch 8 mixed` meets both with or without it;
// `batch 64 long varied` does not from 1 ms either way (gated at P=2048, 1.52–1.66× at
// 0.75–0.77); `vllm short` and `batch 256 varied` are unmoved (1.01–1.06×; 1.4–1.7× at
// L=1 either way).

import { BRONZE_BUDGET, CELLS, FLOOD_FACTOR, PLATINUM_SHARE, TTFT_BUDGET, type Cell } from './admission.js';
import { fmtNum, fmtRatio, listFromEnv, printTable, type Suite, type TableRow } from './harness.js';
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
const PREFILL_DEFAULT = 4096;
/** P's sweep; 1 lets one bronze prompt prefill at a time (a larger prompt still goes alone). */
const PREFILL_LIMITS = [Infinity, 8192, PREFILL_DEFAULT, 2048, 1] as const;
/** The best setting is run again on these seeds (× 100, + the shape's) to judge it. */
const RERUN_SEEDS = [1, 2, 3, 4] as const;
/** P counted as llmgw counts it, bronze entering the engine as it arrives, no gate: the rules as the sweeps try them. */
const AT_RELEASE = { until: 'token', land: 'arrival', gate: 0 } as const;
/** Bronze straight to the engines: admission off. */
const OFF: Limits = { family: 'K', n: Infinity, p: Infinity, ...AT_RELEASE };
/**
 * The latency sweep's columns: P as llmgw counts it; at 2048 (one prompt where prompts are
 * long, as measured through llmgw) the next prompt sent while one prefills (`Until`), alone
 * and decided again as the step ends (`Landing`); and P=∞ so decided, which shows what
 * deciding at the step's boundary is worth to platinum; then the gate (`Limits.gate`) at
 * each P.
 */
const LATENCY_PREFILLS: readonly Prefill[] = [
  ...PREFILL_LIMITS.filter((p) => p !== 1).map((p) => ({ p, ...AT_RELEASE })),
  { p: 2048, until: 'scheduled', land: 'arrival', gate: 0 },
  { p: 2048, until: 'scheduled', land: 'step end', gate: 0 },
  { p: Infinity, until: 'token', land: 'step end', gate: 0 },
  ...[8192, PREFILL_DEFAULT, 2048].flatMap((p) => [Infinity, 2, 1].map((gate) => ({ p, ...AT_RELEASE, gate }))),
];
/** How far before the step's end bronze held for it is decided: any lead beats the engine's own timer for that instant. */
const LANDING_LEAD_MS = 0.1;

/**
 * How the oracle bounds the batch slots bronze may fill on an engine. K: at most n bronze
 * in flight, however many slots platinum holds. R, llmgw's rule: bronze goes only while
 * the engine holds fewer than slots − n requests of any band, so n slots stay free and
 * bronze's share shrinks while platinum peaks.
 */
type Family = 'K' | 'R';
const FAMILIES: readonly Family[] = ['K', 'R'];

/**
 * How long a bronze prompt counts against P. `token`: until the oracle hears of its first
 * token, as llmgw counts. `scheduled`: only until it hears that the engine took the prompt
 * into a step, so the next one travels while it prefills and waits in the engine for the
 * step after — one prompt prefilling, one on its way, yet never two in one step.
 */
type Until = 'token' | 'scheduled';

/**
 * When bronze that reaches an engine mid-step goes in. `arrival`: at once. `step end`: the
 * oracle asks the limits again just before that step ends and lets it in only if they
 * still admit it, else it goes back to the queue. Without latency the rule decides each
 * step's bronze at the step's boundary, counting the platinum waiting for that step; this
 * decides that late again. A router could, if it saw platinum the latency before the
 * engine does — as it would with platinum travelling the same way.
 */
type Landing = 'arrival' | 'step end';

/** Per engine: the slot rule and its n, the most bronze prompt tokens admitted without a first token yet (P, counted `until`), and how bronze enters the engine. */
interface Limits {
  family: Family;
  n: number;
  p: number;
  until: Until;
  land: Landing;
  /**
   * No bronze released to an engine while platinum sent there waits for its first token,
   * as far as the oracle has heard, for at most this many times platinum's p50 TTFT alone
   * after each platinum send (∞: until the first token; 0: no gate).
   */
  gate: number;
}

type Prefill = Pick<Limits, 'p' | 'until' | 'land' | 'gate'>;

const samePrefill = (a: Prefill, b: Prefill): boolean => a.p === b.p && a.until === b.until && a.land === b.land && a.gate === b.gate;
const sameLimits = (a: Limits, b: Limits): boolean => a.family === b.family && a.n === b.n && samePrefill(a, b);

/** The most bronze an engine can hold under `limits`: what platinum leaves it under R is less. */
const bronzeCap = (limits: Limits, slots: number): number => (limits.family === 'K' ? limits.n : slots - limits.n);

/** The limits that let an engine hold at most `cap` bronze: the inverse of `bronzeCap`. */
const limitsFor = (family: Family, cap: number, p: number, slots: number): Limits => ({ family, n: family === 'K' ? cap : slots - cap, p, ...AT_RELEASE });

/**
 * llmgw's defaults, for the summary: what they reach executed perfectly. Its gate
 * (`firstBandPrefilling`) lasts twice the fastest first token it has seen, about platinum's
 * p50 alone and a half: the oracle's twice the p50 is the nearer of its gates.
 */
const llmgwDefaults = (slots: number): Limits => ({ family: 'R', n: Math.ceil(slots * RESERVED_SHARE), p: PREFILL_DEFAULT, ...AT_RELEASE, gate: 2 });

interface Run {
  cell: Cell;
  policy: SchedulingPolicy;
  /** Platinum arrivals per simulated second; 0: none. */
  platinumRate: number;
  /** Bronze kept outstanding, and how the oracle releases it; null: no bronze. */
  bronze: { outstanding: number; limits: Limits } | null;
  measureMs: number;
  /** One way between the oracle and an engine, for bronze (ms): see `BronzeOracle`. */
  latencyMs: number;
  /** Platinum's p50 TTFT alone (ms), the unit of `Limits.gate`; 0 where nothing gates. */
  gateUnitMs: number;
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
    // BENCH_ADMISSION_CELLS=long,batch runs only the cells whose names contain one of the words, as for `admission`;
    // BENCH_BOUND_CELLS='vllm long;batch 8 mixed' only those named exactly (`;`: names hold commas), one shape without its twins.
    const only = listFromEnv('BENCH_ADMISSION_CELLS', ',');
    const named = listFromEnv('BENCH_BOUND_CELLS', ';');
    const cells = CELLS.filter((c) => (!only || only.some((w) => c.name.includes(w))) && (!named || named.includes(c.name)));
    const latencies = latenciesFromEnv();
    // Seeds by the shape's place in the whole matrix, so a subset repeats the full run's figures.
    const shapes = [...groupByShape(CELLS).keys()];
    const rows: Row[] = [];
    const latencyRows: LatencyRow[] = [];
    for (const group of groupByShape(cells).values()) {
      const t0 = performance.now();
      const seed = shapes.indexOf(shapeOf(group[0]!));
      const platinumRate = PLATINUM_SHARE * fleetCapacity(group[0]!);
      if (latencies) {
        // Only the cells' own policies: the question is llmgw's measurement, made under them.
        for (const policy of new Set(group.map(policyOf))) latencyRows.push(...latencySweep(group, policy, platinumRate, seed, latencies));
      } else {
        // Every cell runs under its own policy and under `priority`; one that already orders by priority has nothing to force.
        for (const policy of ['fcfs', 'priority'] as const) {
          if (policy === 'priority' || group.some((c) => policyOf(c) === 'fcfs')) rows.push(sweep(group, policy, platinumRate, seed));
        }
      }
      console.log(`  ${group.map((c) => c.name).join(' = ')}: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    }
    if (latencies) {
      printLatencyGrid(latencyRows);
      return;
    }
    printGrid(rows);
    printSummary(cells, rows);
  },
};

/** BENCH_BOUND_LATENCY_MS=0,0.5,1,2,4: instead of the matrix, llmgw's rule R × P with bronze's reaction latency at each (ms each way). */
function latenciesFromEnv(): number[] | undefined {
  const latencies = listFromEnv('BENCH_BOUND_LATENCY_MS', ',')?.map(Number);
  if (latencies?.some((l) => !Number.isFinite(l) || l < 0)) throw new RangeError(`BENCH_BOUND_LATENCY_MS must list milliseconds ≥ 0, not '${process.env['BENCH_BOUND_LATENCY_MS']}'`);
  return latencies;
}

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
  return simulate({ cell, policy: 'fcfs', platinumRate: 0, bronze, measureMs: CAPACITY_MS, latencyMs: 0, gateUnitMs: 0 }, 0).bronzeRps;
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
  const { measureMs, outstanding } = loadOf(cell, platinumRate);
  const alone = simulate({ cell, policy, platinumRate, bronze: null, measureMs: ALONE_MEASURE_MS, latencyMs: 0, gateUnitMs: 0 }, seed).ttft;
  const flood = (limits: Limits, s = seed): Outcome => simulate({ cell, policy, platinumRate, bronze: { outstanding, limits }, measureMs, latencyMs: 0, gateUnitMs: alone.p50 }, s);
  const off = flood(OFF);
  const settings: Setting[] = [];
  const at = memo(cell, settings, flood);
  for (const family of FAMILIES) {
    for (const n of family === 'K' ? bronzeSlotLimits(slots) : reservedSlots(slots)) for (const p of PREFILL_LIMITS) at({ family, n, p, ...AT_RELEASE });
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
  const reruns = RERUN_SEEDS.map((s) => flood(judged.limits, 100 * s + seed));
  const best = { K: bestOf(base, settings.filter((s) => s.limits.family === 'K')), R: bestOf(base, settings.filter((s) => s.limits.family === 'R')) };
  at(llmgwDefaults(slots));
  const defaults = settings.find((s) => sameLimits(s.limits, llmgwDefaults(slots)))!;
  return { cells, policy, platinumRate, alone, off, settings, best, defaults, judged, reruns };
}

/** The measuring window the platinum rate needs, and the bronze kept outstanding. */
function loadOf(cell: Cell, platinumRate: number): { measureMs: number; outstanding: number } {
  const measureMs = Math.min(MAX_MEASURE_MS, Math.max(MIN_MEASURE_MS, (1000 * PLATINUM_SAMPLES) / platinumRate));
  return { measureMs, outstanding: FLOOD_FACTOR * cell.engines * cell.sim.maxNumSeqs };
}

/** `run` for each limits once, recording them in `settings`. */
function memo(cell: Cell, settings: Setting[], run: (limits: Limits) => Outcome): (limits: Limits) => Outcome {
  return (limits) => {
    const known = settings.find((s) => sameLimits(s.limits, limits));
    if (known) return known.outcome;
    // Limits that release bronze exactly as tried ones do would repeat their run on the same seed: reuse it.
    const twin = settings.find((s) => sameLimits(canonical(s.limits, cell), canonical(limits, cell)));
    const outcome = twin?.outcome ?? run(limits);
    settings.push({ limits, outcome });
    return outcome;
  };
}

/** One shape under one policy at each bronze reaction latency: llmgw's rule, every R × P and the oracle's variants. */
interface LatencyRow extends Baselines {
  cells: Cell[];
  policy: SchedulingPolicy;
  latencyMs: number;
  settings: Setting[];
}

/**
 * llmgw's rule at each latency, on the seed of the matrix: platinum goes as before, so
 * platinum alone is measured once; admission off pays the latency too, so bronze is
 * judged against off's at the same latency.
 */
function latencySweep(cells: Cell[], policy: SchedulingPolicy, platinumRate: number, seed: number, latencies: readonly number[]): LatencyRow[] {
  const cell = cells[0]!;
  const { measureMs, outstanding } = loadOf(cell, platinumRate);
  const alone = simulate({ cell, policy, platinumRate, bronze: null, measureMs: ALONE_MEASURE_MS, latencyMs: 0, gateUnitMs: 0 }, seed).ttft;
  return latencies.map((latencyMs) => {
    const flood = (limits: Limits): Outcome => simulate({ cell, policy, platinumRate, bronze: { outstanding, limits }, measureMs, latencyMs, gateUnitMs: alone.p50 }, seed);
    const settings: Setting[] = [];
    const at = memo(cell, settings, flood);
    for (const n of reservedSlots(cell.sim.maxNumSeqs)) for (const prefill of LATENCY_PREFILLS) at({ family: 'R', n, ...prefill });
    return { cells, policy, latencyMs, alone, off: flood(OFF), settings };
  });
}

/**
 * One form for all limits that release bronze alike on `cell`: a P that the most bronze an
 * engine can hold, all of the longest prompt, cannot reach is ∞; one that no two of the
 * shortest prompts fit is 1, one prompt at a time (P=2048 where prompts are long).
 */
function canonical(limits: Limits, cell: Cell): Limits {
  if (limits.p >= bronzeCap(limits, cell.sim.maxNumSeqs) * cell.prompt[1]) return { ...limits, p: Infinity, until: 'token' }; // no P: nothing to count
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
  const bronze = run.bronze && new BronzeOracle(clock, engines, requests, createRng(2000 + seed), run.bronze.limits, run.bronze.outstanding, endMs, run.latencyMs, run.gateUnitMs);
  const platinum = run.platinumRate > 0 ? startPlatinum(clock, engines, requests, createRng(1000 + seed), run.platinumRate, endMs, bronze) : { ttft: [], pending: 0 };
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

/** What the oracle hears of platinum: sent to an engine, its first token (heard late with latency), its end. */
interface PlatinumWatch {
  platinumSent(engine: SimEngine): void;
  platinumFirstToken(engine: SimEngine): void;
  /** A platinum request finishing frees a slot R counts, so the oracle looks again. */
  release(): void;
}

/** Poisson platinum until `endMs`, each to the engine with the fewest requests in it, told to `watch`. */
function startPlatinum(clock: ManualClock, engines: readonly SimEngine[], requests: Requests, rng: Rng, rate: number, endMs: number, watch: PlatinumWatch | null): PlatinumLog {
  const log: PlatinumLog = { ttft: [], pending: 0 };
  const arrive = (): void => {
    const measured = clock.now() >= WARMUP_MS;
    if (measured) log.pending++;
    const engine = leastLoaded(engines);
    const onToken = (seq: Sequence, index: number): void => {
      if (index > 0) return;
      watch?.platinumFirstToken(engine);
      if (!measured) return;
      log.ttft.push(seq.firstTokenMs - seq.arrivalMs);
      log.pending--;
    };
    const finished = (_: Sequence, reason: FinishReason): void => {
      if (reason !== 'abort') watch?.release(); // not the engines closing at the end
    };
    watch?.platinumSent(engine);
    engine.submit(requests.make(rng, 0, { onToken, onFinish: finished }));
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
  /** Sent and not yet heard finished: on its way, in the engine, or its end on the way back. */
  inFlight: number;
  /** Of those, the ones in the engine: what the engine's own count holds of bronze. */
  inEngine: number;
  /** Prompt tokens of the bronze sent that still count against P (see `Until`). */
  prefilling: number;
  /** Platinum sent there whose first token the oracle has not heard of yet (see `Limits.gate`). */
  platinumAwaiting: number;
  /** When platinum was last sent there. */
  platinumAt: number;
}

/**
 * The oracle's bronze: a closed loop of `outstanding` requests (one replaced the moment it
 * finishes) held in the oracle's queue and released to an engine when that engine's
 * limits allow. What the limits count changes only when a request gets its first token
 * or finishes, and both happen as a step ends, before the engine schedules the next: a
 * release there joins that very next step, as no real router's could.
 *
 * With `latencyMs` it reacts as a router across a network does: it hears of a bronze first
 * token or finish that long after the engine emitted it, and a bronze request it releases
 * reaches the engine that long after, so a release prompted by a step's end misses the
 * step that starts then. Platinum is unchanged: it goes straight to its engine, where the
 * oracle counts it as it is, as a router would that saw it the latency before the engine
 * (platinum travelling the same way arrives as the same Poisson stream, later, and TTFT
 * is taken at the engine, alone too) and heard its finish at once, which flatters a
 * little. The slot rules count the bronze sent and not yet heard finished, with that
 * platinum.
 */
class BronzeOracle implements PlatinumWatch {
  /** Bronze completed within the window. */
  done = 0;
  private readonly held: Map<SimEngine, Held>;
  private readonly placed = new Map<Sequence, Held>();
  /** Per engine, when its last step began to end: under `land: 'step end'`. */
  private readonly stepEnds = new Map<SimEngine, number>();
  private queued: number;
  /** The head of the queue, drawn ahead because P's check needs its prompt length. */
  private head: SubmitRequest;

  constructor(
    private readonly clock: ManualClock,
    private readonly engines: readonly SimEngine[],
    private readonly requests: Requests,
    private readonly rng: Rng,
    private readonly limits: Limits,
    outstanding: number,
    private readonly endMs: number,
    private readonly latencyMs: number,
    /** Platinum's p50 TTFT alone: the unit of `Limits.gate`. */
    private readonly gateUnitMs: number,
  ) {
    this.held = new Map(engines.map((e) => [e, { inFlight: 0, inEngine: 0, prefilling: 0, platinumAwaiting: 0, platinumAt: -Infinity }]));
    this.queued = outstanding;
    this.head = this.draw();
    for (const e of engines) {
      if (limits.until === 'scheduled') e.addObserver({ onScheduled: (seq) => this.scheduled(seq) });
      if (limits.land === 'step end') e.addObserver({ onStep: (step) => this.stepEnds.set(e, step.endMs) });
    }
    this.release();
  }

  /**
   * Runs `fn` one way's latency from now. Without latency at once: a release as a step
   * ends then joins the very next step, which a timer, firing after the engine has
   * scheduled it, would miss.
   */
  private travel(fn: () => void): void {
    if (this.latencyMs === 0) fn();
    else this.clock.schedule(fn, this.latencyMs);
  }

  private draw(): SubmitRequest {
    return this.requests.make(this.rng, 1, {
      onToken: (seq, index) => {
        if (index > 0 || this.limits.until !== 'token') return;
        const held = this.placed.get(seq)!;
        this.travel(() => this.prefilled(held, seq.numPromptTokens));
      },
      onFinish: (seq, reason) => {
        if (reason === 'abort') return; // the engines closing at the end
        const held = this.placed.get(seq)!;
        held.inEngine--;
        if (seq.finishedMs >= WARMUP_MS && seq.finishedMs <= this.endMs) this.done++;
        this.travel(() => {
          held.inFlight--;
          this.placed.delete(seq);
          this.queued++;
          this.release();
        });
      },
    });
  }

  /**
   * A bronze prompt taken into a step, under `until: 'scheduled'`. Always by timer: the
   * engine is still filling that step, which a request submitted now would join.
   */
  private scheduled(seq: Sequence): void {
    const held = this.placed.get(seq);
    if (!held || seq.numPreemptions > 0) return; // platinum, or a prompt already counted before its preemption
    this.clock.schedule(() => this.prefilled(held, seq.numPromptTokens), this.latencyMs);
  }

  platinumSent(engine: SimEngine): void {
    const held = this.held.get(engine)!;
    held.platinumAwaiting++;
    held.platinumAt = this.clock.now();
    const gateMs = this.limits.gate * this.gateUnitMs;
    if (Number.isFinite(gateMs) && gateMs > 0) this.clock.schedule(() => this.release(), gateMs);
  }

  /** Heard one way's latency late, as a bronze first token is. */
  platinumFirstToken(engine: SimEngine): void {
    this.travel(() => {
      this.held.get(engine)!.platinumAwaiting--;
      this.release();
    });
  }

  private prefilled(held: Held, prompt: number): void {
    held.prefilling -= prompt;
    this.release();
  }

  /** Releases the queue's head while some engine's limits allow it, to the one with the fewest requests among those. */
  release(): void {
    while (this.queued > 0) {
      const prompt = this.head.promptTokenIds.length;
      const open = this.engines.filter((e) => this.admits(e, prompt));
      if (open.length === 0) return;
      const engine = open.reduce((best, e) => (this.load(e) < this.load(best) ? e : best));
      const held = this.held.get(engine)!;
      held.inFlight++;
      held.prefilling += prompt;
      this.queued--;
      const request = this.head;
      this.travel(() => this.land(engine, held, request));
      this.head = this.draw();
    }
  }

  /** Bronze reaching `engine`: in at once or, under `land: 'step end'`, decided again just before the engine's step in progress ends. */
  private land(engine: SimEngine, held: Held, request: SubmitRequest): void {
    if (this.limits.land === 'arrival') return this.enter(engine, held, request);
    const wait = (this.stepEnds.get(engine) ?? 0) - LANDING_LEAD_MS - this.clock.now();
    const decide = (): void => this.decideAgain(engine, held, request);
    if (wait > 0) this.clock.schedule(decide, wait);
    else decide();
  }

  /** Asks the limits again as if `request` were not yet sent: in, or back to the queue (the loop draws another). */
  private decideAgain(engine: SimEngine, held: Held, request: SubmitRequest): void {
    const prompt = request.promptTokenIds.length;
    held.inFlight--;
    held.prefilling -= prompt;
    if (!this.admits(engine, prompt)) {
      this.queued++;
      this.release();
      return;
    }
    held.inFlight++;
    held.prefilling += prompt;
    this.enter(engine, held, request);
  }

  private enter(engine: SimEngine, held: Held, request: SubmitRequest): void {
    held.inEngine++;
    this.placed.set(engine.submit(request), held);
  }

  /** Requests on `engine` as the oracle counts them: the platinum in it and the bronze it has sent there. Without latency, the engine's own count. */
  private load(engine: SimEngine): number {
    const held = this.held.get(engine)!;
    return engine.numRunning + engine.numWaiting - held.inEngine + held.inFlight;
  }

  private admits(engine: SimEngine, prompt: number): boolean {
    const held = this.held.get(engine)!;
    const { family, n, p } = this.limits;
    const slot = family === 'K' ? held.inFlight < n : this.load(engine) < engine.maxNumSeqs - n;
    if (held.platinumAwaiting > 0 && this.clock.now() < held.platinumAt + this.limits.gate * this.gateUnitMs) return false;
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
const gateText = (g: number): string => (g === 0 ? '' : g === Infinity ? ' gate' : ` gate ${g}×`);
const prefillText = (l: Prefill): string => `P=${pText(l.p)}${l.until === 'scheduled' ? ' sched' : ''}${l.land === 'step end' ? ' held' : ''}${gateText(l.gate)}`;
const limitsText = (l: Limits): string => `${l.family}=${l.n} ${prefillText(l)}`;
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
          const s = own.find((x) => x.limits.n === n && x.limits.p === p && !x.limits.gate);
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
      `llmgw's defaults: R = ceil(${RESERVED_SHARE} × slots), P = ${PREFILL_DEFAULT} and the gate, executed perfectly; one setting fixed beforehand, so its single seed flatters nothing.`,
      'judged at: the setting of either rule that clears both budgets by the widest margin (or misses by the least), run again on fresh platinum and bronze draws, since the lowest of many noisy p99s flatters its setting;',
      'both budgets judges those runs: ✓ all meet both, ✗ none does, edge: some.',
    ].join('\n'),
  );
}

/** Per shape, policy and latency, one line per R tried: ×p99 and bronze ratio under each P, then the best R within bronze's budget. */
function printLatencyGrid(rows: readonly LatencyRow[]): void {
  console.log('');
  const out: TableRow[] = [];
  for (const row of rows) {
    const slots = row.cells[0]!.sim.maxNumSeqs;
    out.push({
      section: `${row.cells.map((x) => x.name).join(' = ')} — ${row.policy}; latency ${row.latencyMs} ms each way; alone p99 ${fmtNum(row.alone.p99)} ms; off ×p99 ${fmtRatio(ratioOf(row, row.off))}, bronze ${fmtNum(row.off.bronzeRps)} req/s`,
    });
    for (const n of reservedSlots(slots)) {
      const entries = LATENCY_PREFILLS.map((column) => {
        const s = row.settings.find((x) => x.limits.n === n && samePrefill(x.limits, column));
        return s ? outcomeText(row, s.outcome) : '';
      });
      out.push([`  R=${n}${n === llmgwDefaults(slots).n ? ' (default)' : ''}`, ...entries]);
    }
    const best = LATENCY_PREFILLS.map((column) => bestOf(row, row.settings.filter((x) => samePrefill(x.limits, column))));
    out.push(['  best R', ...best.map((b) => (b ? `${outcomeText(row, b.outcome)} R=${b.limits.n}` : 'none'))]);
  }
  printTable(['slots kept free', ...LATENCY_PREFILLS.map(prefillText)], out);
  console.log(
    [
      `Each entry: platinum p99 TTFT over its p99 alone (budget ≤ ${TTFT_BUDGET}×), then bronze completions/s over admission off's at the same latency (budget ≥ ${BRONZE_BUDGET}); ✓ meets both.`,
      `best R: the lowest platinum ratio among the R that keep bronze within its budget. R and P as in the matrix, llmgw's rule; one seed, the matrix's.`,
      'Latency: the oracle hears of a bronze first token or finish that long after the engine emitted it, and bronze it releases reaches the engine that long after.',
      'Platinum goes straight to its engine, as without latency: one alone p99 for all latencies.',
      'sched: a prompt counts against P only until the oracle hears that the engine took it into a step, not until its first token.',
      `held: bronze reaching an engine mid-step is decided again ${LANDING_LEAD_MS} ms before the step ends, counting the platinum that came meanwhile, and goes back to the queue if refused.`,
      "gate: no bronze released to an engine while platinum sent there waits for a first token the oracle has heard of (llmgw: `firstBandPrefilling`); 2×, 1×: for at most that many times platinum's p50 alone after each send.",
    ].join('\n'),
  );
}
