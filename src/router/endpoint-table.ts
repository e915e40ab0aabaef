import { Pool } from 'undici';
import type { EndpointProbe } from '../messages/endpoints.js';

export interface EndpointSpec {
  id: string;
  url: string;
  models: readonly string[];
  weight: number;
}

export interface EndpointState extends EndpointSpec {
  ready: boolean;
  reason: string | null;
  probedAt: number | null;
  /** Requests this process has in flight to the endpoint: always current, unlike scraped metrics. */
  inflight: number;
  /** One undici pool per endpoint: keep-alive connections, pipelining off. */
  readonly pool: Pool;
}

/**
 * The main thread's view of every engine, read synchronously by the data port. Pollers
 * on a worker thread send probes through the endpoint-registry actor, which applies
 * them here; the request path never waits on another thread.
 */
export class EndpointTable {
  private readonly byId = new Map<string, EndpointState>();
  private readonly byModel = new Map<string, EndpointState[]>();
  private readonly connectTimeoutMs: number;

  constructor(opts: { connectTimeoutMs: number }) {
    this.connectTimeoutMs = opts.connectTimeoutMs;
  }

  add(spec: EndpointSpec): EndpointState {
    const state: EndpointState = {
      ...spec,
      ready: false,
      reason: 'not probed yet',
      probedAt: null,
      inflight: 0,
      pool: new Pool(spec.url, { connections: 256, connectTimeout: this.connectTimeoutMs, keepAliveTimeout: 30_000 }),
    };
    this.byId.set(spec.id, state);
    for (const m of spec.models) {
      let list = this.byModel.get(m);
      if (!list) this.byModel.set(m, (list = []));
      list.push(state);
    }
    return state;
  }

  apply(probe: EndpointProbe): void {
    const e = this.byId.get(probe.id);
    if (!e) return;
    e.ready = probe.ready;
    e.reason = probe.reason;
    e.probedAt = probe.at;
  }

  forModel(model: string): readonly EndpointState[] {
    return this.byModel.get(model) ?? [];
  }

  all(): EndpointState[] {
    return [...this.byId.values()];
  }

  async close(): Promise<void> {
    await Promise.all(this.all().map((e) => e.pool.close()));
  }
}
