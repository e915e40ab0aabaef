// Engine readiness is "the leader's /v1/models lists the served name" (DESIGN rule 6):
// a port that accepts connections, or /health answering, can still belong to an engine
// that is loading weights or serving another model.
import { request, type Dispatcher } from 'undici';
import type { HealthCheck } from '../engines/index.js';

/** Null when the engine serves `check.servedName`; otherwise why not, in words. */
export async function probeServedModel(check: HealthCheck, dispatcher: Dispatcher, timeoutMs: number): Promise<string | null> {
  try {
    const res = await request(check.url, { dispatcher, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
    if (res.statusCode !== 200) {
      await res.body.dump();
      return `${check.url} answered ${res.statusCode}`;
    }
    const body = (await res.body.json()) as { data?: { id?: unknown }[] } | null;
    const ids = Array.isArray(body?.data) ? body.data.map((m) => String(m?.id)) : [];
    if (ids.includes(check.servedName)) return null;
    return `${check.url} does not list ${check.servedName} (lists ${ids.join(', ') || 'nothing'})`;
  } catch (err) {
    const e = err as { code?: string; message?: string };
    return `${check.url} unreachable: ${e.code ?? e.message ?? String(err)}`;
  }
}
