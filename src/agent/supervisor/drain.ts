// Draining never cuts in-flight requests (DESIGN rule 5). The control plane routes
// nothing new to a draining shard, so before its processes are signalled the leader is
// asked, through its Prometheus metrics, how many requests it still runs or queues, until
// none are left or the grace period is over.
import { setTimeout as sleep } from 'node:timers/promises';
import { request, type Dispatcher } from 'undici';
import type { EngineKind, HealthCheck } from '../engines/index.js';

/** The gauges whose sum is the work an engine still has: running and queued requests. */
const IN_FLIGHT: Readonly<Record<EngineKind, readonly string[]>> = {
  vllm: ['vllm:num_requests_running', 'vllm:num_requests_waiting'],
  sglang: ['sglang:num_running_reqs', 'sglang:num_queue_reqs'],
};

/** Sums the samples of `names` in Prometheus text; null when none of them is there. */
export function sumGauges(text: string, names: readonly string[]): number | null {
  let sum: number | null = null;
  for (const line of text.split('\n')) {
    const name = /^([^\s{#]+)/.exec(line)?.[1];
    if (name === undefined || !names.includes(name)) continue;
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (Number.isFinite(value)) sum = (sum ?? 0) + value;
  }
  return sum;
}

export interface DrainOptions {
  readonly engine: EngineKind;
  readonly check: HealthCheck;
  readonly dispatcher: Dispatcher;
  readonly graceMs: number;
  readonly pollMs: number;
  /** Told what the drain is waiting for, for the shard's status. */
  readonly progress: (what: string) => void;
}

/**
 * Resolves once the leader reports no request in flight, or when it cannot say (its
 * metrics unreachable or missing: nothing to wait for), or after `graceMs` with what is
 * still in flight, in words, for the log.
 */
export async function drainRequests(o: DrainOptions): Promise<string | null> {
  const url = new URL('/metrics', o.check.url).href;
  const deadline = Date.now() + o.graceMs;
  for (;;) {
    const n = await inFlight(url, IN_FLIGHT[o.engine], o.dispatcher);
    if (n === null || n === 0) return null;
    if (Date.now() >= deadline) return `${n} requests were still in flight after the ${o.graceMs} ms drain grace period`;
    o.progress(`draining: waiting for ${n} requests in flight to finish (at most ${o.graceMs} ms)`);
    await sleep(o.pollMs);
  }
}

async function inFlight(url: string, names: readonly string[], dispatcher: Dispatcher): Promise<number | null> {
  try {
    const res = await request(url, { dispatcher, headersTimeout: 2_000, bodyTimeout: 2_000 });
    if (res.statusCode !== 200) {
      await res.body.dump();
      return null;
    }
    return sumGauges(await res.body.text(), names);
  } catch {
    return null;
  }
}
