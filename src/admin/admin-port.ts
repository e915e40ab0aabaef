import { timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { LlmgwError } from '../errors.js';
import { sendError, sendJson } from '../net/respond.js';
import { matchFleetRoute, serveFleet, type FleetRoutesOptions } from './fleet-routes.js';
import { matchTenancyRoute, serveTenancy, type TenancyRoutesOptions } from './tenancy-routes.js';
import type { AccountingMsg } from '../messages/accounting.js';
import type { AdmissionMsg } from '../messages/admission.js';
import { batchCapacitySource, type EndpointTable } from '../router/endpoint-table.js';
import { batchSlots } from '../router/load-estimate.js';
import type { ActorRef, ActorSystem } from '../runtime/index.js';

export interface AdminPortOptions extends Omit<FleetRoutesOptions, 'reload'> {
  system: ActorSystem;
  table: EndpointTable;
  /** When set, /admin/* requires `Authorization: Bearer <token>`. */
  token: string | undefined;
  /** Main-thread registries merged into /metrics (endpoint gauges). */
  registries: Registry[];
  accounting: ActorRef<AccountingMsg>;
  /**
   * Sends the data port's held usage records on (`UsageBatcher.flush`): posted ahead of
   * the usage read on the same mailbox, so the answer counts every request that has ended.
   */
  flushUsage?: () => void;
  /** Null when admission control is off. */
  admission: ActorRef<AdmissionMsg> | null;
  /** How a shutdown's drain stands; null while the server is not shutting down. */
  drain?: () => DrainStatus | null;
  /** Reads the config file again and applies it (`POST /admin/v1/reload`); unset: the server does not reload. */
  reload?: FleetRoutesOptions['reload'];
  /** The store actor and the main thread's directory; unset: tenancy is off (its routes answer 409). */
  tenancy?: TenancyRoutesOptions;
}

const NO_TENANCY: TenancyRoutesOptions = { store: null, applyChange: () => {} };

export interface DrainStatus {
  /** Requests still being served. */
  inFlight: number;
  /** When those still running are cut, ms from now. */
  cutInMs: number;
}

/** The routes of the admin API besides the fleet's (fleet-routes.ts); each takes GET only. */
const GET_ROUTES = new Set(['/admin/v1/actors', '/admin/v1/endpoints', '/admin/v1/admission', '/admin/v1/usage']);

/**
 * The operator's port: Prometheus metrics and the management API behind `llmgw ctl`.
 * Kept apart from the data port: different audience, different exposure.
 */
export function createAdminPort(opts: AdminPortOptions): Server {
  const processRegistry = new Registry();
  collectDefaultMetrics({ register: processRegistry, prefix: 'llmgw_' });

  // Null when the request may pass; else why not. A missing and a wrong token read
  // differently: the first is a setup step, the second a mistake in the token.
  const refusal = (req: IncomingMessage): string | null => {
    if (opts.token === undefined) return null;
    const header = req.headers.authorization;
    if (header === undefined || header === '') return 'the admin API needs a token and none was sent (Authorization: Bearer <admin_token>)';
    if (!/^Bearer /i.test(header)) return "the Authorization header must be 'Bearer <admin_token>'";
    const given = Buffer.from(header.slice('Bearer '.length));
    const want = Buffer.from(opts.token);
    return given.length === want.length && timingSafeEqual(given, want) ? null : 'the admin token sent is wrong (it is not the admin_token of this server)';
  };

  return createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://admin');
    const path = url.pathname;
    const method = req.method ?? 'GET';
    const notAllowed = (allow: string): void =>
      sendError(res, new LlmgwError('LLMGW_METHOD_NOT_ALLOWED', `${method} is not allowed on ${path}; it takes ${allow}`), null, { allow });
    const run = async (): Promise<void> => {
      if ((path === '/health' || path === '/metrics') && method !== 'GET') return notAllowed('GET');
      if (path === '/health') {
        // Through a shutdown the admin port stays up and says how the drain goes.
        const drain = opts.drain?.() ?? null;
        return drain ? sendJson(res, 503, { status: 'draining', in_flight: drain.inFlight, cut_in_ms: drain.cutInMs }) : sendJson(res, 200, { status: 'ok' });
      }
      if (path === '/metrics') {
        const merged = Registry.merge([processRegistry, ...opts.registries, await opts.system.metrics()]);
        const text = await merged.metrics();
        res.writeHead(200, { 'content-type': merged.contentType });
        res.end(text);
        return;
      }
      if (!path.startsWith('/admin/')) return sendError(res, new LlmgwError('LLMGW_NOT_FOUND', `no route for ${method} ${path}`));
      const refused = refusal(req);
      if (refused !== null) return sendError(res, new LlmgwError('LLMGW_UNAUTHORIZED', refused));
      // The tenancy routes read their bodies (or drop them) themselves.
      const tenancy = matchTenancyRoute(method, path);
      if (tenancy !== null && 'allow' in tenancy) return notAllowed(tenancy.allow);
      if (tenancy !== null) return sendJson(res, 200, await serveTenancy(tenancy.route, req, url.searchParams, opts.tenancy ?? NO_TENANCY));
      // A command's body carries nothing: drop it so the connection can be reused.
      req.resume();
      const fleet = matchFleetRoute(method, path);
      if (fleet !== null && 'allow' in fleet) return notAllowed(fleet.allow);
      if (fleet !== null) return sendJson(res, 200, await serveFleet(fleet.route, url.searchParams, { control: opts.control, reload: opts.reload }));
      if (method !== 'GET') return GET_ROUTES.has(path) ? notAllowed('GET') : sendError(res, new LlmgwError('LLMGW_NOT_FOUND', `no route for ${method} ${path}`));
      switch (path) {
        case '/admin/v1/actors':
          return sendJson(res, 200, await opts.system.stats());
        case '/admin/v1/endpoints': {
          const now = Date.now();
          return sendJson(
            res,
            200,
            opts.table.all().map((e) => ({
              id: e.id,
              url: e.url,
              models: e.models,
              pool: e.pool,
              priority: e.priority,
              weight: e.weight,
              ready: e.ready,
              reason: e.reason,
              probedAt: e.probedAt,
              inflight: e.inflight,
              draining: e.draining,
              breaker: e.health.breakerAt(now),
              consecutiveFailures: e.health.consecutiveFailures,
              blocked: e.health.blocked(now),
              load: e.load,
              batchCapacity: e.batchCapacity,
              batchCapacityFrom: batchCapacitySource(e),
              batchSlots: batchSlots(e),
              peakRunning: e.peakRunning,
              prefillTokensPerMs: e.prefill.tokensPerMs,
              loadAgeMs: e.loadAt === null ? null : now - e.loadAt,
              loadError: e.loadError,
            })),
          );
        }
        case '/admin/v1/admission':
          return sendJson(res, 200, opts.admission ? { enabled: true, models: await opts.admission.ask({ type: 'stats' }) } : { enabled: false, models: [] });
        case '/admin/v1/usage': {
          const limit = Number(url.searchParams.get('limit') ?? 100);
          if (!Number.isInteger(limit) || limit < 0) return sendError(res, new LlmgwError('LLMGW_INVALID_REQUEST', `limit must be a whole number, not '${url.searchParams.get('limit')}'`));
          opts.flushUsage?.();
          const [totals, recent] = await Promise.all([opts.accounting.ask({ type: 'totals' }), opts.accounting.ask({ type: 'recent', limit })]);
          return sendJson(res, 200, { totals, recent });
        }
        default:
          return sendError(res, new LlmgwError('LLMGW_NOT_FOUND', `no route for GET ${path}`));
      }
    };
    run().catch((err: unknown) => sendError(res, LlmgwError.from(err)));
  });
}
