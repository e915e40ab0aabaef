import { Command } from 'clipanion';
import { AdminViewCommand, formatTable } from '../admin-client.js';

/** What /admin/v1/endpoints returns per endpoint (the fields this command shows). */
interface EndpointView {
  id: string;
  url: string;
  models: string[];
  priority: number;
  ready: boolean;
  reason: string | null;
  inflight: number;
  breaker: string;
  blocked: string | null;
  load: { waiting: number; running: number; kvUsage: number | null } | null;
  batchCapacity: number | null;
  batchCapacityFrom: string | null;
  /** The slots admission counts now: the capacity, or fewer where the engine's KV cache holds fewer. */
  batchSlots: number | null;
  /** The most the engine was seen running at once; a learnt size above it is being probed. */
  peakRunning: number;
  /** How fast the engine prefills, prompt tokens per ms, as fitted on the router's own requests (prefill pacing holds the lower bands to a time at it); null: not known yet. */
  prefillTokensPerMs: number | null;
  loadAgeMs: number | null;
  loadError: string | null;
}

/** `llmgw ctl endpoints`: the router's view of every engine, and why one takes no traffic. */
export class CtlEndpointsCommand extends AdminViewCommand<EndpointView[]> {
  static override paths = [['ctl', 'endpoints']];
  static override usage = Command.Usage({
    category: 'ctl',
    description: "Show the router's endpoints: readiness, load, breaker",
    details:
      'One line per endpoint: whether it is routable and, when not, why (the readiness probe, the breaker or a cooldown); requests in flight; the engine\'s last scraped queue, batch and KV usage with the scrape\'s age; the batch size admission counts room against, where it comes from (the engine\'s own settings, the config or launch, or learnt — with the most it was seen running where a learnt size is being probed above that), and how many its KV cache holds where that is fewer; how fast the engine prefills, fitted on the router\'s own requests (prefill pacing holds batch prompts to `prefill_ms_per_replica` of it). `--admin` and `--token` default to LLMGW_ADMIN and LLMGW_ADMIN_TOKEN.',
    examples: [
      ['Table', 'llmgw ctl endpoints --admin http://127.0.0.1:4001'],
      ['JSON', 'llmgw ctl endpoints --json'],
    ],
  });

  protected readonly apiPath = '/admin/v1/endpoints';
  protected render = renderEndpoints;
}

export function renderEndpoints(endpoints: EndpointView[]): string {
  const rows = [
    ['ID', 'MODELS', 'PRIO', 'STATE', 'INFLIGHT', 'WAITING', 'RUNNING', 'BATCH', 'PREFILL', 'KV', 'SCRAPED', 'BREAKER', 'WHY'],
    ...endpoints.map((e) => {
      const why = !e.ready ? e.reason ?? 'not ready' : e.blocked ?? (e.loadError ? `metrics: ${e.loadError}` : '');
      return [
        e.id,
        e.models.join(','),
        String(e.priority),
        !e.ready ? 'not-ready' : e.blocked ? 'blocked' : 'routable',
        String(e.inflight),
        e.load ? String(e.load.waiting) : '-',
        e.load ? String(e.load.running) : '-',
        batchText(e),
        e.prefillTokensPerMs === null ? '-' : `${e.prefillTokensPerMs.toPrecision(3)} tok/ms`,
        e.load?.kvUsage === null || e.load?.kvUsage === undefined ? '-' : `${Math.round(e.load.kvUsage * 100)}%`,
        e.loadAgeMs === null ? 'never' : `${(e.loadAgeMs / 1000).toFixed(1)}s ago`,
        e.breaker,
        why,
      ];
    }),
  ];
  return formatTable(rows);
}

/**
 * `64 (config)`; `64 (config), 25 by KV` where the KV cache holds fewer requests than the
 * batch size; `272 (learnt, seen running 256)` where a learnt size is being probed above
 * anything the engine ran — a guess under test, not a fact about the engine.
 */
export function batchText(e: Pick<EndpointView, 'batchCapacity' | 'batchCapacityFrom' | 'batchSlots' | 'peakRunning'>): string {
  if (e.batchCapacity === null) return '-';
  const from = e.batchCapacityFrom ?? 'learnt';
  const probing = from === 'learnt' && e.batchCapacity > e.peakRunning;
  const size = `${e.batchCapacity} (${from}${probing ? `, seen running ${e.peakRunning}` : ''})`;
  return e.batchSlots !== null && e.batchSlots < e.batchCapacity ? `${size}, ${e.batchSlots} by KV` : size;
}
