// Probing one engine: readiness and load, as a poller reports them to the registry.
//
// Ready means what it means for vLLM: `/health` answers 200 and `/v1/models` lists the
// served name — a process that is up but still loading weights refuses connections, and
// one that lists another model is misconfigured, so neither may receive traffic. Load
// comes from `/metrics` (vLLM or SGLang names); a failed scrape leaves the endpoint
// routable, since the router's own in-flight counts still stand in for it. An SGLang
// engine's settings (`engine-settings.ts`) are read once each time it turns ready.
import type { Dispatcher } from 'undici';
import type { EndpointProbe, EngineSettings } from '../../messages/endpoints.js';
import { parseEngineLoad } from './engine-load.js';
import { parseSglangServerInfo } from './engine-settings.js';

export interface ProbeTarget {
  id: string;
  /** The served names the endpoint must list in /v1/models to count as ready. */
  models: readonly string[];
  /** Bound on each request's headers and body. */
  timeoutMs: number;
}

/**
 * One probe of the endpoint `pool` is connected to. `settings`: what an earlier probe read
 * of the engine's settings since it last turned ready; undefined, they are read now if
 * the engine is ready. The probe carries them when known (null: the engine publishes none).
 */
export async function probeEndpoint(s: ProbeTarget, pool: Dispatcher, settings?: EngineSettings | null): Promise<EndpointProbe> {
  const at = Date.now();
  const get = (path: string) => pool.request({ method: 'GET', path, headersTimeout: s.timeoutMs, bodyTimeout: s.timeoutMs });
  const [{ sglang, ...readiness }, scrape] = await Promise.all([checkReady(s, get), scrapeLoad(get)]);
  if (!readiness.ready) return { id: s.id, at, ...readiness, ...scrape };
  if (settings === undefined) settings = sglang ? await readSglangSettings(get) : null;
  return { id: s.id, at, ...readiness, ...scrape, ...(settings !== undefined && { settings }) };
}

/** The engine's load alone (`/metrics`): what a refresh between polls reads. */
export async function scrapeEndpointLoad(s: ProbeTarget, pool: Dispatcher): Promise<Pick<EndpointProbe, 'at' | 'load' | 'loadError'>> {
  const at = Date.now();
  return { at, ...(await scrapeLoad((path) => pool.request({ method: 'GET', path, headersTimeout: s.timeoutMs, bodyTimeout: s.timeoutMs }))) };
}

type Get = (path: string) => Promise<Dispatcher.ResponseData>;

const describe = (err: unknown): string => {
  const e = err as { code?: string; message?: string };
  return `${e.code ?? ''} ${e.message ?? String(err)}`.trim();
};

type Readiness = Pick<EndpointProbe, 'ready' | 'reason' | 'models' | 'maxModelLen'> & { sglang: boolean };

async function checkReady(s: ProbeTarget, get: Get): Promise<Readiness> {
  const result = (ready: boolean, reason: string | null, models: string[] = [], maxModelLen: number | null = null, sglang = false) => ({ ready, reason, models, maxModelLen, sglang });
  try {
    const health = await get('/health');
    await health.body.dump();
    if (health.statusCode !== 200) return result(false, `/health answered ${health.statusCode}`);
    const res = await get('/v1/models');
    if (res.statusCode !== 200) {
      await res.body.dump();
      return result(false, `/v1/models answered ${res.statusCode}`);
    }
    const body = (await res.body.json()) as { data?: { id?: unknown; max_model_len?: unknown; owned_by?: unknown }[] };
    const listed = body.data ?? [];
    const models = listed.map((m) => String(m.id));
    const missing = s.models.filter((m) => !models.includes(m));
    if (missing.length > 0) return result(false, `/v1/models does not list ${missing.join(', ')} (lists ${models.join(', ') || 'nothing'})`, models);
    return result(true, null, models, servedContext(s.models, listed), listed.some((m) => m.owned_by === 'sglang'));
  } catch (err) {
    return result(false, `unreachable: ${describe(err)}`);
  }
}

/** The context every served name fits in: the smallest `max_model_len` listed for them. */
function servedContext(served: readonly string[], listed: readonly { id?: unknown; max_model_len?: unknown }[]): number | null {
  let min: number | null = null;
  for (const m of listed) {
    const len = m.max_model_len;
    if (!served.includes(String(m.id)) || !Number.isSafeInteger(len) || (len as number) < 1) continue;
    min = min === null ? (len as number) : Math.min(min, len as number);
  }
  return min;
}

/**
 * SGLang's settings from `/server_info`, or `/get_server_info` on releases before the
 * rename; null where neither has them (the router then learns what it would have read);
 * undefined where the engine could not be asked, to be asked again at the next poll.
 */
async function readSglangSettings(get: Get): Promise<EngineSettings | null | undefined> {
  for (const path of ['/server_info', '/get_server_info']) {
    let res: Dispatcher.ResponseData;
    try {
      res = await get(path);
    } catch {
      return undefined;
    }
    if (res.statusCode !== 200) {
      await res.body.dump();
      continue;
    }
    try {
      return parseSglangServerInfo(await res.body.json());
    } catch {
      return null; // not JSON: not a server that publishes them
    }
  }
  return null;
}

async function scrapeLoad(get: Get): Promise<Pick<EndpointProbe, 'load' | 'loadError'>> {
  try {
    const res = await get('/metrics');
    if (res.statusCode !== 200) {
      await res.body.dump();
      return { load: null, loadError: `/metrics answered ${res.statusCode}` };
    }
    return { load: parseEngineLoad(await res.body.text()), loadError: null };
  } catch (err) {
    return { load: null, loadError: `/metrics: ${describe(err)}` };
  }
}
