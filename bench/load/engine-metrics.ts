// Reads counters from an engine's Prometheus /metrics (vLLM names; the sim serves the same),
// so a run can be judged by what the engines saw — prefix-cache hits, preemptions —
// not only by what the client measured.

import { request } from 'undici';

export const PREFIX_HITS = 'vllm:prefix_cache_hits_total';
export const PREFIX_QUERIES = 'vllm:prefix_cache_queries_total';
export const PREEMPTIONS = 'vllm:num_preemptions_total';
/** The engine's own TTFT histogram's sum (s) and count: its mean, from arrival at the engine. */
export const ENGINE_TTFT_SUM = 'vllm:time_to_first_token_seconds_sum';
export const ENGINE_TTFT_COUNT = 'vllm:time_to_first_token_seconds_count';

/** Each named counter, summed over its label sets (0 when absent). */
export async function scrapeCounters(baseUrl: string, names: readonly string[]): Promise<Map<string, number>> {
  const res = await request(new URL('/metrics', baseUrl));
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`${baseUrl}/metrics answered ${res.statusCode}`);
  const out = new Map(names.map((n) => [n, 0]));
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const name = /^[^{\s]+/.exec(line)?.[0];
    if (name === undefined || !out.has(name)) continue;
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (Number.isFinite(value)) out.set(name, out.get(name)! + value);
  }
  return out;
}
