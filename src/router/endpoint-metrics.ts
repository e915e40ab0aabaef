import { Gauge, Registry } from 'prom-client';
import { BREAKER_GAUGE } from './endpoint-health.js';
import type { EndpointState, EndpointTable } from './endpoint-table.js';

/**
 * Gauges of every endpoint's live state, read from the table when Prometheus scrapes,
 * so the request path never touches them.
 */
export function endpointMetrics(table: EndpointTable): Registry {
  const registry = new Registry();
  const gauge = (name: string, help: string, read: (e: EndpointState, now: number) => number | null): void => {
    new Gauge({
      name,
      help,
      labelNames: ['endpoint'],
      registers: [registry],
      collect(this: Gauge<'endpoint'>) {
        this.reset();
        const now = Date.now();
        for (const e of table.all()) {
          const v = read(e, now);
          if (v !== null) this.set({ endpoint: e.id }, v);
        }
      },
    });
  };
  gauge('llmgw_endpoint_ready', '1 when the endpoint passed its last readiness probe', (e) => (e.ready ? 1 : 0));
  gauge('llmgw_endpoint_inflight', 'Requests the router has in flight to the endpoint', (e) => e.inflight);
  gauge('llmgw_endpoint_breaker_state', 'Circuit breaker: 0 closed, 1 half-open, 2 open', (e, now) => BREAKER_GAUGE[e.health.breakerAt(now)]);
  gauge('llmgw_endpoint_consecutive_failures', 'Failed requests in a row', (e) => e.health.consecutiveFailures);
  gauge('llmgw_endpoint_scrape_age_seconds', "Age of the engine's last scraped load; absent until the first scrape", (e, now) =>
    e.loadAt === null ? null : (now - e.loadAt) / 1000,
  );
  gauge('llmgw_endpoint_waiting', 'Requests waiting inside the engine, as last scraped', (e) => e.load?.waiting ?? null);
  gauge('llmgw_endpoint_running', 'Requests running inside the engine, as last scraped', (e) => e.load?.running ?? null);
  gauge('llmgw_endpoint_kv_usage', 'KV-cache usage 0–1, as last scraped', (e) => e.load?.kvUsage ?? null);
  return registry;
}
