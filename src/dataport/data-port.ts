import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { RouterConfig } from '../config/index.js';
import { LlmgwError } from '../errors.js';
import { createLogger } from '../log.js';
import type { UsageRecord } from '../messages/accounting.js';
import type { Admission } from '../router/admission/admission.js';
import type { Catalog } from '../router/catalog.js';
import type { EndpointTable } from '../router/endpoint-table.js';
import { RetryBudget } from '../router/retry-budget.js';
import type { PrefixIndex } from '../router/scheduler/prefix-index.js';
import type { Scheduler } from '../router/scheduler/scheduler.js';
import type { Profile } from '../router/scheduler/types.js';
import type { CpuRunner } from '../runtime/index.js';
import { answerClientError } from './client-error.js';
import { buildModelRoutes, type ModelRoute } from './model-routes.js';
import { compose } from './pipeline.js';
import { refuse } from './refuse.js';
import type { InferencePath, RequestContext } from './request-context.js';
import { sendError, sendJson } from '../net/respond.js';
import { accountStage } from './stages/account.js';
import { admitStage } from './stages/admit.js';
import { forwardStage } from './stages/forward.js';
import { parseStage } from './stages/parse.js';
import { resolveStage } from './stages/resolve.js';
import { scheduleStage } from './stages/schedule.js';
import { authenticate, authenticateStage } from './stages/authenticate.js';
import { limitStage } from './stages/limit.js';
import { TenancyGate, type DataPortTenancy } from './tenancy-gate.js';
import type { Stage } from './pipeline.js';

export interface DataPortOptions {
  catalog: Catalog;
  table: EndpointTable;
  scheduler: Scheduler;
  profiles: ReadonlyMap<string, Profile>;
  /** Routing profile per canonical model name, where the config sets one. */
  modelProfiles: ReadonlyMap<string, string>;
  prefixIndex: PrefixIndex;
  router: RouterConfig;
  /** Hashes long prompts off the main thread. */
  cpu: CpuRunner;
  /** Receives one record per request, whatever its ending. Must not block. */
  usage: (record: UsageRecord) => void;
  /** Admission per canonical model name; null when admission is off. */
  admissions: ReadonlyMap<string, Admission> | null;
  /** API keys, limits, budgets and billing; absent: no keys, every request served as it comes. */
  tenancy?: DataPortTenancy;
}

export interface DataPort {
  readonly server: Server;
  /** Requests being served now (queued, routed or streaming). */
  inFlight(): number;
  /**
   * Ends every request still in flight with `error`: a stream with an error event and
   * `[DONE]`, a request not yet answered with the error, a JSON body being relayed by a
   * reset. Returns how many were cut. Shutdown calls it at its deadline.
   */
  cutAll(error: LlmgwError): number;
  /**
   * A reloaded catalog: the models clients may name, their aliases, fallbacks and routing
   * profiles. Requests already resolved keep what they resolved.
   */
  setCatalog(catalog: Catalog, modelProfiles: ReadonlyMap<string, string>): void;
}

const INFERENCE_PATHS: ReadonlySet<string> = new Set<InferencePath>(['/v1/chat/completions', '/v1/completions', '/v1/embeddings']);
const MODELS_PATH = '/v1/models';
const EMPTY = Buffer.alloc(0);
const log = createLogger('dataport');

/**
 * The OpenAI-compatible port clients talk to. An inference request goes through the
 * stages of `pipeline.ts`: account → parse → resolve → admit → schedule → forward, and
 * with tenancy on account → authenticate → parse → resolve → limit → admit → schedule →
 * forward. Everything here runs
 * on the main thread and reads the endpoint table synchronously: nothing on the request
 * path waits on another thread.
 */
export function createDataPort(opts: DataPortOptions): DataPort {
  const created = Math.floor(Date.now() / 1000);
  const { router } = opts;
  // Filled in place on a reload: the stages hold these very objects.
  const names: string[] = [];
  const routes = new Map<string, ModelRoute>();
  const setCatalog = (catalog: Catalog, modelProfiles: ReadonlyMap<string, string>): void => {
    const next = buildModelRoutes({ catalog, profiles: opts.profiles, modelProfiles, defaultProfile: router.default_profile, admissions: opts.admissions });
    routes.clear();
    for (const [k, v] of next) routes.set(k, v);
    names.splice(0, names.length, ...catalog.names());
  };
  setCatalog(opts.catalog, opts.modelProfiles);
  const active = new Set<RequestContext>();
  const budget = new RetryBudget(router.retries.budget_percent, router.retries.min_retry_concurrency);
  const gate = opts.tenancy ? new TenancyGate(opts.tenancy, opts.table) : null;
  const stages: (Stage | null)[] = [
    accountStage(opts.usage, active, gate),
    gate && authenticateStage(gate),
    parseStage(router.max_body_bytes),
    resolveStage({ routes, profiles: opts.profiles, admission: router.admission, names, table: opts.table }),
    gate && limitStage({ gate, routes, profiles: opts.profiles, admission: router.admission }),
    admitStage({ table: opts.table, prefixIndex: opts.prefixIndex, prefix: router.prefix, cpu: opts.cpu }),
    scheduleStage({ table: opts.table, scheduler: opts.scheduler, prefixIndex: opts.prefixIndex, budget, maxAttempts: router.retries.max_attempts }, router.prefix, opts.cpu),
    forwardStage(router, gate),
  ];
  const pipeline = compose(stages.filter((s): s is Stage => s !== null));
  const modelObject = (id: string): Record<string, unknown> => ({ id, object: 'model', created, owned_by: 'llmgw' });

  /** The names a request may see on /v1/models: all of them, or with tenancy on those its key may use (else its 401). */
  const visibleTo = (req: IncomingMessage): ((name: string) => boolean) | LlmgwError => {
    if (!gate) return () => true;
    const view = authenticate(gate.directory, req, Date.now());
    if (view instanceof LlmgwError) return view;
    const allowed = view.limits.models;
    return allowed === null ? () => true : (name) => allowed.has(routes.get(name)?.entry.name ?? name);
  };

  const handle = (req: IncomingMessage, res: ServerResponse, arrived: number): Promise<void> | void => {
    const path = (req.url ?? '/').split('?', 1)[0]!;
    if (INFERENCE_PATHS.has(path)) {
      if (req.method !== 'POST') return sendError(res, new LlmgwError('LLMGW_METHOD_NOT_ALLOWED', `${req.method} is not allowed on ${path}; use POST`));
      return pipeline(newContext(req, res, path as InferencePath, arrived));
    }
    if (path === '/health') return sendJson(res, 200, { status: 'ok' });
    if (path === MODELS_PATH || path.startsWith(`${MODELS_PATH}/`)) {
      if (req.method !== 'GET') return sendError(res, new LlmgwError('LLMGW_METHOD_NOT_ALLOWED', `${req.method} is not allowed on ${path}; use GET`));
      const visible = visibleTo(req);
      if (visible instanceof LlmgwError) return sendError(res, visible);
      const shown = gate ? names.filter(visible) : names;
      if (path === MODELS_PATH) return sendJson(res, 200, { object: 'list', data: shown.map(modelObject) });
      // Model ids may hold slashes (`meta-llama/Llama-3.1-8B`): everything after the prefix is the id.
      const id = safeDecode(path.slice(MODELS_PATH.length + 1));
      if (id !== null && routes.has(id) && visible(id)) return sendJson(res, 200, modelObject(id));
      return sendError(res, new LlmgwError('LLMGW_MODEL_NOT_FOUND', `the model '${id ?? path.slice(MODELS_PATH.length + 1)}' does not exist; available: ${shown.join(', ')}`), 'model');
    }
    return sendError(res, new LlmgwError('LLMGW_NOT_FOUND', `no route for ${req.method} ${path}`));
  };

  const server = createServer((req, res) => {
    const arrived = performance.now();
    try {
      const pending = handle(req, res, arrived);
      // The account stage catches what a stage throws; this is the last guard for a bug in it.
      if (pending) pending.catch((err: unknown) => fail(res, err));
    } catch (err) {
      fail(res, err);
    }
  });

  // What node:http cannot parse (a garbage request line, oversized headers, broken chunking) still gets the OpenAI shape.
  server.on('clientError', answerClientError);

  return {
    server,
    inFlight: () => active.size,
    cutAll(error) {
      let cut = 0;
      for (const ctx of [...active]) {
        if (ctx.cut.now) ctx.cut.now(error);
        else if (!ctx.res.headersSent) refuse(ctx, error, null, { 'retry-after': '1' });
        else ctx.res.destroy();
        cut++;
      }
      return cut;
    },
    setCatalog,
  };
}

function fail(res: ServerResponse, err: unknown): void {
  log.error('request failed', { error: err });
  if (!res.headersSent) sendError(res, LlmgwError.from(err));
  else res.destroy();
}

function safeDecode(s: string): string | null {
  try {
    return decodeURIComponent(s);
  } catch {
    return null;
  }
}

function newContext(req: IncomingMessage, res: ServerResponse, path: InferencePath, arrived: number): RequestContext {
  const record = newRecord(requestIdOf(req), path);
  return {
    req,
    res,
    path,
    arrived,
    record,
    raw: EMPTY,
    body: {},
    stream: false,
    // Set by the resolve and schedule stages before any later stage reads them.
    route: undefined as never,
    profile: undefined as never,
    plan: undefined as never,
    stripUsage: false,
    collect: false,
    band: -1,
    permit: null,
    headCached: false,
    readmit: null,
    prefix: null,
    session: null,
    tenant: null,
    billed: false,
    cut: { now: null },
  };
}

function requestIdOf(req: IncomingMessage): string {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && given.length > 0 && given.length <= 128 ? given : randomUUID();
}

function newRecord(id: string, path: string): UsageRecord {
  return {
    id,
    at: Date.now(),
    path,
    modelAsked: '',
    modelServed: null,
    fallback: false,
    endpoint: null,
    status: 0,
    error: null,
    stream: false,
    promptTokens: 0,
    completionTokens: 0,
    cachedTokens: 0,
    usageEstimated: false,
    ttftMs: null,
    durationMs: 0,
    queueMs: 0,
    band: null,
    attempts: 0,
    scheduleMicros: 0,
    profile: '',
  };
}
