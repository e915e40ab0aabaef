import type { AdmissionConfig } from '../../src/config/types.js';
import { EndpointTable, type EndpointState } from '../../src/router/endpoint-table.js';

export const HEALTH = { cooldownFailures: 2, cooldownMs: 1_000, breakerFailures: 5, openMs: 10_000, maxOpenMs: 60_000 };

/** A table of ready endpoints for model `m`; pools are created lazily by undici and never used here. */
export function tableOf(n: number, shape: (i: number) => Partial<EndpointState> = () => ({})): { table: EndpointTable; eps: EndpointState[] } {
  const table = new EndpointTable({ connectTimeoutMs: 1_000, health: HEALTH });
  const eps: EndpointState[] = [];
  for (let i = 0; i < n; i++) {
    const e = table.add({ id: `e${i}`, url: `http://127.0.0.1:${20_000 + i}`, models: ['m'], weight: 1, priority: 0, pool: null });
    e.ready = true;
    e.reason = null;
    Object.assign(e, shape(i));
    eps.push(e);
  }
  return { table, eps };
}

/** Two bands, no reserve, no pacing: admission's rules with nothing else in the way. */
export const ADMISSION: AdmissionConfig = {
  enabled: true,
  bands: [
    { name: 'platinum', queue_limit: 100, queue_timeout_ms: 1_000 },
    { name: 'bronze', queue_limit: 100, queue_timeout_ms: 1_000 },
  ],
  priority_header: true,
  target_waiting_per_replica: 2,
  reserved_share: 0,
  kv_ceiling: 0.9,
  stale_inflight_per_replica: 8,
  max_queued: 1_000,
  aging_ms: 60_000,
  prefill_tokens_per_replica: 0,
  prefill_ms_per_replica: 0,
  recall: true,
};
