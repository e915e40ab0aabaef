// Shared pieces of the benchmark suites: the suite contract the driver runs, a thin
// layer over tinybench that returns plain numbers, and an aligned text table.
import os from 'node:os';
import { performance, type EventLoopUtilization } from 'node:perf_hooks';
import { Bench, type Fn } from 'tinybench';

/** One named group of benchmarks; `node dist/bench/run.js <name>` runs it alone. */
export interface Suite {
  readonly name: string;
  readonly description: string;
  run(): Promise<void>;
}

/**
 * A list from the environment variable `name`, split at `separator` and trimmed;
 * undefined where it is unset or lists nothing (an empty `VAR=` selects everything, as
 * leaving it out does, not nothing).
 */
export function listFromEnv(name: string, separator: string): string[] | undefined {
  const words = process.env[name]?.split(separator).map((w) => w.trim()).filter((w) => w !== '');
  return words === undefined || words.length === 0 ? undefined : words;
}

/**
 * A count from the environment variable `name`: a whole number, `min` (1) or more;
 * `fallback` where it is unset or empty. `what` says what it counts, for the error.
 */
export function countFromEnv(name: string, fallback: number, what: string, min = 1): number {
  const raw = process.env[name]?.trim();
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < min) throw new Error(`${name}: ${what}, a whole number of ${min} or more, not '${raw}'`);
  return n;
}

/** The median of `xs`, a run that measured nothing (NaN) counting as the worst (highest). */
export function median(xs: readonly number[]): number {
  const v = xs.map((x) => (Number.isNaN(x) ? Infinity : x)).sort((a, b) => a - b);
  const mid = v.length >> 1;
  return v.length % 2 === 1 ? v[mid]! : (v[mid - 1]! + v[mid]!) / 2;
}

/** The median of repeated runs' figures, formatted by `fmt`, with their min–max beside it. */
export function fmtSpread(xs: readonly number[], fmt: (x: number) => string): string {
  return `${fmt(median(xs))} (${fmt(Math.min(...xs))}–${fmt(Math.max(...xs))})`;
}

export function machineInfo(): string[] {
  const cpus = os.cpus();
  return [
    `node ${process.version} (v8 ${process.versions.v8}) on ${os.platform()} ${os.arch()} ${os.release()}`,
    `cpu: ${cpus[0]?.model.trim() ?? 'unknown'}; ${cpus.length} logical cpus, availableParallelism ${os.availableParallelism()}`,
    `memory: ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB total, ${(os.freemem() / 2 ** 30).toFixed(1)} GiB free; load average ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  ];
}

// ---- measuring --------------------------------------------------------------------------

export interface Case {
  name: string;
  fn: Fn;
  /** The function returns a promise (stated, so tinybench does not probe it with a call). */
  async: boolean;
  /**
   * Samples come from `overriddenDuration` (timed on another thread): the main thread's
   * busy time per iteration then measures the driving, not the thing, and is not reported.
   */
  innerTimed?: boolean;
}

export interface Measurement {
  name: string;
  samples: number;
  meanUs: number;
  p50Us: number;
  p99Us: number;
  /** Main-thread event-loop busy time per iteration (µs), from eventLoopUtilization. */
  mainBusyUs: number | undefined;
}

/** How long to measure one case. */
export interface Budget {
  /** Measuring time per case, ms. */
  time: number;
  /** At most this many samples per case (sub-µs cases would otherwise take millions). */
  maxSamples: number;
  warmupTime: number;
  maxWarmupSamples: number;
}

/**
 * Runs `cases` one after the other, each one iteration at a time (warmup on), and
 * returns their latency statistics in µs. A case stops at `time` or `maxSamples`,
 * whichever comes first: tinybench's sequential mode only knows minimums, so this uses
 * its task mode with one iteration in flight (`threshold: 1`), which is sequential too
 * but honours the caps. Any failing iteration fails the whole run: a benchmark that
 * silently measured an error path would be worse than none.
 */
export async function measure(budget: Budget, cases: Case[]): Promise<Map<string, Measurement>> {
  const bench = new Bench({
    warmup: true,
    throws: true,
    concurrency: 'task',
    threshold: 1,
    time: budget.time,
    iterations: budget.maxSamples,
    warmupTime: budget.warmupTime,
    warmupIterations: budget.maxWarmupSamples,
  });
  const elu = new Map<string, { start?: EventLoopUtilization; delta?: EventLoopUtilization }>();
  for (const c of cases) {
    const slot: { start?: EventLoopUtilization; delta?: EventLoopUtilization } = {};
    elu.set(c.name, slot);
    bench.add(c.name, c.fn, {
      async: c.async,
      beforeAll: (mode) => {
        if (mode === 'run') slot.start = performance.eventLoopUtilization();
      },
      afterAll: (mode) => {
        if (mode === 'run' && slot.start) slot.delta = performance.eventLoopUtilization(slot.start);
      },
    });
  }
  await bench.run();
  const out = new Map<string, Measurement>();
  for (const task of bench.tasks) {
    const r = task.result;
    if (r.state !== 'completed') {
      throw new Error(`benchmark '${task.name}' did not complete: ${r.state === 'errored' ? r.error.message : r.state}`);
    }
    const c = cases.find((x) => x.name === task.name)!;
    const n = r.latency.samplesCount;
    const delta = elu.get(task.name)?.delta;
    out.set(task.name, {
      name: task.name,
      samples: n,
      meanUs: r.latency.mean * 1000,
      p50Us: r.latency.p50 * 1000,
      p99Us: r.latency.p99 * 1000,
      mainBusyUs: c.innerTimed || delta === undefined || n === 0 ? undefined : (delta.active * 1000) / n,
    });
  }
  return out;
}

// ---- printing ---------------------------------------------------------------------------

/** A table row, or a section heading printed across the table. */
export type TableRow = string[] | { section: string };

/** Prints an aligned text table: the first `leftColumns` columns left-aligned, the rest right-aligned. */
export function printTable(headers: string[], rows: TableRow[], leftColumns = 1): void {
  const cells = rows.filter((r): r is string[] => Array.isArray(r));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]): string =>
    r
      .map((c, i) => (i < leftColumns ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
      .join('  ')
      .trimEnd();
  const rule = widths.map((w) => '─'.repeat(w)).join('  ');
  console.log(line(headers));
  console.log(rule);
  for (const r of rows) {
    if (Array.isArray(r)) console.log(line(r));
    else console.log(`${r.section}`);
  }
  console.log(rule);
}

/** Three significant digits, no exponent: 0.0412, 1.23, 45.6, 1234. */
export function fmtNum(x: number | undefined): string {
  if (x === undefined || !Number.isFinite(x)) return '—';
  if (x === 0) return '0';
  const abs = Math.abs(x);
  const decimals = abs >= 100 ? 0 : abs >= 10 ? 1 : abs >= 1 ? 2 : Math.min(4, 2 - Math.floor(Math.log10(abs)));
  return x.toFixed(decimals);
}

export function fmtRate(perSecond: number | undefined): string {
  if (perSecond === undefined || !Number.isFinite(perSecond)) return '—';
  return Math.round(perSecond).toLocaleString('en-US');
}

export function fmtRatio(x: number | undefined): string {
  if (x === undefined || !Number.isFinite(x)) return '—';
  return `${x >= 10 ? x.toFixed(0) : x >= 1 ? x.toFixed(1) : x.toFixed(2)}×`;
}

export function fmtDelta(x: number | undefined): string {
  if (x === undefined || !Number.isFinite(x)) return '—';
  return `${x >= 0 ? '+' : '−'}${fmtNum(Math.abs(x))}`;
}
