import { Counter, Histogram, type Registry } from 'prom-client';
import type { UsageRecord } from '../messages/accounting.js';

// The request metrics on /metrics, built from usage records off the request path:
// prom-client's label lookups cost the data port nothing.

export type RequestMetrics = ReturnType<typeof createRequestMetrics>;

// A restarted actor finds its metrics already registered on the thread; reuse them.
const metricsByRegistry = new WeakMap<Registry, RequestMetrics>();

export function requestMetrics(registry: Registry): RequestMetrics {
  let m = metricsByRegistry.get(registry);
  if (!m) metricsByRegistry.set(registry, (m = createRequestMetrics(registry)));
  return m;
}

function createRequestMetrics(registry: Registry) {
  const registers = [registry];
  const secondsBuckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
  return {
    requests: new Counter({ name: 'llmgw_requests_total', help: 'Requests by model served (or asked), endpoint and HTTP status', labelNames: ['model', 'endpoint', 'status'], registers }),
    ttft: new Histogram({ name: 'llmgw_request_ttft_seconds', help: 'Arrival to the first token: the first byte of a stream, the engine\'s first token for an answer collected from its stream, the whole answer for one the engine sent whole', labelNames: ['model', 'stream'], buckets: secondsBuckets, registers }),
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
    tokens: new Counter({ name: 'llmgw_tokens_total', help: 'Tokens as the engines reported them (estimated for streams that ended before the engine\'s report)', labelNames: ['model', 'kind'], registers }),
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

/** One request's record into the request metrics, counted under `model` (asked for as `asked`): bounded labels, see ModelLabels. */
export function observeRequest(m: RequestMetrics, r: UsageRecord, model: string, asked: string): void {
  m.requests.inc({ model, endpoint: r.endpoint ?? '', status: String(r.status) });
  m.duration.observe({ model }, r.durationMs / 1000);
  if (r.ttftMs !== null) m.ttft.observe({ model, stream: String(r.stream) }, r.ttftMs / 1000);
  if (r.band !== null) {
    // Never sent anywhere because the client left, or shutdown answered it while queued: cancelled.
    const unsent = r.attempts === 0 && (r.status === 499 || r.error === 'LLMGW_SHUTTING_DOWN');
    const outcome = r.error === 'LLMGW_QUEUE_FULL' ? 'shed' : r.error === 'LLMGW_QUEUE_TIMEOUT' ? 'timed_out' : unsent ? 'cancelled' : 'admitted';
    m.admission.inc({ model, band: r.band, outcome });
    if (outcome === 'admitted') m.queue.observe({ model, band: r.band }, r.queueMs / 1000);
  }
  if (r.promptTokens > 0) m.tokens.inc({ model, kind: 'prompt' }, r.promptTokens);
  if (r.completionTokens > 0) m.tokens.inc({ model, kind: 'completion' }, r.completionTokens);
  if (r.cachedTokens > 0) m.tokens.inc({ model, kind: 'cached' }, r.cachedTokens);
  if (r.attempts > 1) m.retries.inc({ model }, r.attempts - 1);
  if (r.fallback && r.modelServed !== null) m.fallbacks.inc({ asked, served: model });
  if (r.attempts > 0) m.schedule.observe(r.scheduleMicros / 1e6 / r.attempts);
}
