// Latency and throughput figures from the Samples of one run.

import type { Sample } from './http-load.js';

export interface Distribution {
  n: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

/** Nearest-rank percentiles of `values` (NaN when empty). */
export function distribution(values: readonly number[]): Distribution {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  const n = v.length;
  const at = (p: number): number => (n === 0 ? NaN : v[Math.min(n - 1, Math.max(0, Math.ceil((p / 100) * n) - 1))]!);
  let sum = 0;
  for (const x of v) sum += x;
  return { n, mean: n === 0 ? NaN : sum / n, p50: at(50), p90: at(90), p99: at(99), max: n === 0 ? NaN : v[n - 1]! };
}

export interface RunSummary {
  requests: number;
  ok: number;
  errors: number;
  /** The first few distinct errors, to print when a run went wrong. */
  errorKinds: string[];
  /** Successful requests per second of wall time. */
  rps: number;
  latency: Distribution;
  ttft: Distribution;
}

/** Latency figures cover successful requests only: a fast error is not a fast answer. */
export function summarize(samples: readonly Sample[], wallMs: number): RunSummary {
  const ok = samples.filter((s) => s.error === undefined);
  const kinds = new Map<string, number>();
  for (const s of samples) if (s.error !== undefined) kinds.set(s.error, (kinds.get(s.error) ?? 0) + 1);
  return {
    requests: samples.length,
    ok: ok.length,
    errors: samples.length - ok.length,
    errorKinds: [...kinds].slice(0, 3).map(([k, n]) => `${k} ×${n}`),
    rps: (ok.length * 1000) / wallMs,
    latency: distribution(ok.map((s) => s.totalMs)),
    ttft: distribution(ok.map((s) => s.ttftMs)),
  };
}
