import { Counter, Histogram, type Registry } from 'prom-client';
import type { AccountingMsg, UsageRecord, UsageTotals } from '../../messages/accounting.js';
import { defineActor } from '../../runtime/actor.js';

export interface AccountingArgs {
  /** Recent records kept for the admin API (`/admin/v1/usage`). */
  recent: number;
}

interface State {
  args: AccountingArgs;
  ring: UsageRecord[];
  next: number;
  totals: UsageTotals;
  m: RequestMetrics;
}

/**
 * Receives one usage record per request from the data port and turns it into the
 * request metrics and running totals. It runs off the main thread: the data port sends
 * the records of each event-loop turn as one message (a postMessage per record cost it
 * ~6% of its CPU at 7k req/s) and prom-client's label lookups happen here. Tenancy
 * (budgets, the usage store) will consume the same stream.
 */
export const accounting = defineActor<AccountingMsg>()({
  kind: 'accounting',
  module: import.meta.url,
  // Losing a record loses a bill, so a full mailbox refuses and the sender keeps the
  // records (UsageBatcher sends one batch at a time, so this is room for bursts of asks
  // for totals and recent records beside it).
  mailbox: { capacity: 1_024, overflow: 'reject' },
  init: (args: AccountingArgs, ctx): State => ({
    args,
    ring: [],
    next: 0,
    totals: { requests: 0, promptTokens: 0, completionTokens: 0, cachedTokens: 0, byModel: {} },
    m: requestMetrics(ctx.metrics),
  }),
  handlers: {
    records: (s, { records }) => {
      for (const r of records) add(s, r);
    },
    recent: (s, { limit }) => {
      // Oldest first, newest last.
      const ordered = s.ring.length < s.args.recent ? s.ring : [...s.ring.slice(s.next), ...s.ring.slice(0, s.next)];
      return ordered.slice(-Math.max(0, limit));
    },
    totals: (s) => s.totals,
  },
});

type RequestMetrics = ReturnType<typeof createRequestMetrics>;

// A restarted actor finds its metrics already registered on the thread; reuse them.
const metricsByRegistry = new WeakMap<Registry, RequestMetrics>();

function requestMetrics(registry: Registry): RequestMetrics {
  let m = metricsByRegistry.get(registry);
  if (!m) metricsByRegistry.set(registry, (m = createRequestMetrics(registry)));
  return m;
}

function createRequestMetrics(registry: Registry) {
  const registers = [registry];
  const secondsBuckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
  return {
    requests: new Counter({ name: 'llmgw_requests_total', help: 'Requests by model served (or asked), endpoint and HTTP status', labelNames: ['model', 'endpoint', 'status'], registers }),
    ttft: new Histogram({ name: 'llmgw_request_ttft_seconds', help: 'Arrival to the first byte sent to the client', labelNames: ['model', 'stream'], buckets: secondsBuckets, registers }),
    duration: new Histogram({ name: 'llmgw_request_duration_seconds', help: 'Arrival to the last byte sent to the client', labelNames: ['model'], buckets: secondsBuckets, registers }),
    queue: new Histogram({
      name: 'llmgw_admission_queue_seconds',
      help: 'Time admitted requests waited for admission (0 when they went straight through)',
      labelNames: ['model', 'band'],
      buckets: [0, ...secondsBuckets],
      registers,
    }),
    admission: new Counter({
      name: 'llmgw_admission_requests_total',
      help: 'Requests by admission band and outcome: admitted, shed (429), timed_out (503), cancelled (client left while queued)',
      labelNames: ['model', 'band', 'outcome'],
      registers,
    }),
    tokens: new Counter({ name: 'llmgw_tokens_total', help: 'Tokens as the engines reported them', labelNames: ['model', 'kind'], registers }),
    retries: new Counter({ name: 'llmgw_retries_total', help: 'Extra attempts after a failure before the first byte', labelNames: ['model'], registers }),
    fallbacks: new Counter({ name: 'llmgw_fallbacks_total', help: 'Requests served by a fallback model', labelNames: ['asked', 'served'], registers }),
    schedule: new Histogram({
      name: 'llmgw_scheduler_decision_seconds',
      help: 'Time to filter, score and pick an endpoint',
      buckets: [1e-6, 2.5e-6, 5e-6, 1e-5, 2e-5, 5e-5, 1e-4, 2.5e-4, 1e-3],
      registers,
    }),
  };
}

/** One request's record into the ring, the totals and the request metrics. */
function add(s: State, r: UsageRecord): void {
  if (s.ring.length < s.args.recent) s.ring.push(r);
  else s.ring[s.next] = r;
  s.next = (s.next + 1) % s.args.recent;

  const t = s.totals;
  t.requests++;
  t.promptTokens += r.promptTokens;
  t.completionTokens += r.completionTokens;
  t.cachedTokens += r.cachedTokens;
  const model = r.modelServed ?? r.modelAsked;
  const per = (t.byModel[model] ??= { requests: 0, promptTokens: 0, completionTokens: 0, errors: 0 });
  per.requests++;
  per.promptTokens += r.promptTokens;
  per.completionTokens += r.completionTokens;
  if (r.status >= 400) per.errors++;

  const { m } = s;
  m.requests.inc({ model, endpoint: r.endpoint ?? '', status: String(r.status) });
  m.duration.observe({ model }, r.durationMs / 1000);
  if (r.ttftMs !== null) m.ttft.observe({ model, stream: String(r.stream) }, r.ttftMs / 1000);
  if (r.band !== null) {
    const outcome = r.error === 'LLMGW_QUEUE_FULL' ? 'shed' : r.error === 'LLMGW_QUEUE_TIMEOUT' ? 'timed_out' : r.status === 499 && r.attempts === 0 ? 'cancelled' : 'admitted';
    m.admission.inc({ model, band: r.band, outcome });
    if (outcome === 'admitted') m.queue.observe({ model, band: r.band }, r.queueMs / 1000);
  }
  if (r.promptTokens > 0) m.tokens.inc({ model, kind: 'prompt' }, r.promptTokens);
  if (r.completionTokens > 0) m.tokens.inc({ model, kind: 'completion' }, r.completionTokens);
  if (r.cachedTokens > 0) m.tokens.inc({ model, kind: 'cached' }, r.cachedTokens);
  if (r.attempts > 1) m.retries.inc({ model }, r.attempts - 1);
  if (r.fallback && r.modelServed !== null) m.fallbacks.inc({ asked: r.modelAsked, served: r.modelServed });
  if (r.attempts > 0) m.schedule.observe(r.scheduleMicros / 1e6 / r.attempts);
}
