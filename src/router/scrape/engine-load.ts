// Reading an engine's load out of its Prometheus `/metrics` text: the waiting queue, the
// running batch, KV-cache usage, the inter-token latency totals (its step time) and
// vLLM's tokens-per-step histogram (whether its steps fill their token budget), under
// vLLM's names (current and deprecated) and SGLang's (`sglang:` and the newer
// `sglang_`). Only the handful of series the router uses are looked at; the rest of the
// page (other histograms' buckets, mostly) is skipped by name before any label is parsed.

import type { EngineLoad, StepTotals } from '../../messages/endpoints.js';

type Field = 'waiting' | 'running' | 'kvUsage' | 'itlSum' | 'itlCount' | 'stepTokens' | 'steps' | 'stepBucket';

// Exact names: `vllm:num_requests_waiting` is a prefix of `…_waiting_by_reason`, which
// must not be counted twice.
const SERIES = new Map<string, Field>([
  ['vllm:num_requests_waiting', 'waiting'],
  ['vllm:num_requests_running', 'running'],
  ['vllm:kv_cache_usage_perc', 'kvUsage'],
  ['vllm:gpu_cache_usage_perc', 'kvUsage'], // removed in vLLM 0.12; older fleets still run it
  ['sglang:num_queue_reqs', 'waiting'],
  ['sglang:num_running_reqs', 'running'],
  ['sglang:token_usage', 'kvUsage'],
  ['sglang_num_queue_reqs', 'waiting'],
  ['sglang_num_running_reqs', 'running'],
  ['sglang_token_usage', 'kvUsage'],
  // Histogram totals of the time between tokens: a step's duration, per token.
  ['vllm:inter_token_latency_seconds_sum', 'itlSum'],
  ['vllm:inter_token_latency_seconds_count', 'itlCount'],
  ['vllm:time_per_output_token_seconds_sum', 'itlSum'], // its name before vLLM 0.11
  ['vllm:time_per_output_token_seconds_count', 'itlCount'],
  ['sglang:inter_token_latency_seconds_sum', 'itlSum'],
  ['sglang:inter_token_latency_seconds_count', 'itlCount'],
  ['sglang_inter_token_latency_seconds_sum', 'itlSum'],
  ['sglang_inter_token_latency_seconds_count', 'itlCount'],
  ['sglang:time_per_output_token_seconds_sum', 'itlSum'], // what SGLang 0.4–0.5 publishes
  ['sglang:time_per_output_token_seconds_count', 'itlCount'],
  ['sglang_time_per_output_token_seconds_sum', 'itlSum'],
  ['sglang_time_per_output_token_seconds_count', 'itlCount'],
  // A histogram despite its name: tokens computed per engine step (vLLM v1).
  ['vllm:iteration_tokens_total_sum', 'stepTokens'],
  ['vllm:iteration_tokens_total_count', 'steps'],
  ['vllm:iteration_tokens_total_bucket', 'stepBucket'],
]);

/** Labels that repeat one value per tensor-parallel rank rather than add to it. */
const REPLICATED_LABELS = /(?:^|,)\s*(?:tp_rank|pp_rank)="[^"]*"/g;
/** A histogram bucket's bound, kept apart from the labels that say which engine it is. */
const BUCKET_BOUND = /(?:^|,)\s*le="([^"]*)"/;

export class MetricsParseError extends Error {}

/**
 * Parses the exposition text. Counts are summed over data-parallel engines (`engine`,
 * `dp_rank`); a series repeated per tensor-parallel rank counts once; KV usage is the
 * fullest engine's, since that is the one that preempts first. Throws MetricsParseError
 * when the text carries neither vLLM's nor SGLang's queue metrics — most often a
 * server started without `--enable-metrics`, or not an engine at all.
 */
export function parseEngineLoad(text: string): EngineLoad {
  // field → (labels without tp_rank → value); max within a key, then combined.
  const seen: Record<Field, Map<string, number>> = {
    waiting: new Map(),
    running: new Map(),
    kvUsage: new Map(),
    itlSum: new Map(),
    itlCount: new Map(),
    stepTokens: new Map(),
    steps: new Map(),
    stepBucket: new Map(),
  };
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf('\n', start);
    if (end === -1) end = text.length;
    const line = text.charCodeAt(start) === 35 /* # */ ? '' : text.slice(start, end);
    start = end + 1;
    if (line === '') continue;
    const brace = line.indexOf('{');
    const space = line.indexOf(' ');
    const nameEnd = brace !== -1 && (space === -1 || brace < space) ? brace : space;
    if (nameEnd <= 0) continue;
    const field = SERIES.get(line.slice(0, nameEnd));
    if (field === undefined) continue;
    let labels = '';
    let rest: string;
    if (line.charCodeAt(nameEnd) === 123 /* { */) {
      const close = line.lastIndexOf('}');
      if (close < nameEnd) throw new MetricsParseError(`unterminated label set: ${line.slice(0, 120)}`);
      labels = line.slice(nameEnd + 1, close).replace(REPLICATED_LABELS, '');
      if (field === 'stepBucket') {
        const le = BUCKET_BOUND.exec(labels);
        if (!le) continue;
        labels = `${le[1]}|${labels.replace(BUCKET_BOUND, '')}`;
      }
      rest = line.slice(close + 1);
    } else {
      rest = line.slice(nameEnd);
    }
    const value = Number(rest.trim().split(/\s+/, 1)[0]);
    if (!Number.isFinite(value)) continue; // NaN from an engine with nothing to report yet
    const m = seen[field];
    m.set(labels, Math.max(m.get(labels) ?? -Infinity, value));
  }
  if (seen.waiting.size === 0 && seen.running.size === 0) {
    throw new MetricsParseError('no vllm:num_requests_waiting or sglang:num_queue_reqs series: is this an engine, started with metrics enabled?');
  }
  const sum = (m: Map<string, number>): number => {
    let t = 0;
    for (const v of m.values()) t += v;
    return t;
  };
  const load: EngineLoad = {
    waiting: sum(seen.waiting),
    running: sum(seen.running),
    kvUsage: seen.kvUsage.size === 0 ? null : Math.min(1, Math.max(0, ...seen.kvUsage.values())),
  };
  if (seen.itlCount.size > 0 && seen.itlSum.size > 0) load.itl = { sum: sum(seen.itlSum), count: sum(seen.itlCount) };
  if (seen.steps.size > 0 && seen.stepTokens.size > 0) {
    const count = sum(seen.steps);
    load.steps = { tokens: sum(seen.stepTokens), count, buckets: byBound(seen.stepBucket) };
  }
  return load;
}

/** Cumulative bucket counts keyed `le|labels`, summed per finite bound, bounds ascending. */
function byBound(buckets: Map<string, number>): Array<[number, number]> {
  const counts = new Map<number, number>();
  for (const [key, count] of buckets) {
    const bound = Number(key.slice(0, key.indexOf('|')));
    if (Number.isFinite(bound)) counts.set(bound, (counts.get(bound) ?? 0) + count);
  }
  return [...counts].sort((a, b) => a[0] - b[0]);
}

/**
 * The smallest bucket bound no step exceeded: over the engine's life, or, given the
 * scrape before, over the steps taken between the two. Null when a step exceeded every
 * finite bound, when no step was taken, or when the counts went back (a restart). A step
 * that spends the whole budget lands in the bucket of that bound, so an engine of budget
 * 8192 reads 8192 here once it has filled a step.
 */
export function largestStep(now: StepTotals, before?: StepTotals | null): number | null {
  const steps = now.count - (before?.count ?? 0);
  if (steps <= 0) return null;
  for (const [bound, count] of now.buckets) {
    const earlier = before?.buckets.find(([b]) => b === bound)?.[1] ?? 0;
    if (count < earlier) return null;
    if (count - earlier >= steps) return bound;
  }
  return null;
}
