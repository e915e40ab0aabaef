import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { RouterConfig } from '../config/index.js';
import { LlmgwError } from '../errors.js';
import { createLogger } from '../log.js';
import type { UsageRecord } from '../messages/accounting.js';
import type { Admission } from '../router/admission/admission.js';
import type { Catalog, CatalogEntry } from '../router/catalog.js';
import type { EndpointState, EndpointTable } from '../router/endpoint-table.js';
import type { PrefixIndex } from '../router/scheduler/prefix-index.js';
import type { Scheduler } from '../router/scheduler/scheduler.js';
import type { Profile, RouteRequest } from '../router/scheduler/types.js';
import type { CpuRunner } from '../runtime/index.js';
import { hashPrefix } from '../tasks/prefix-hash.js';
import { answerClientError } from './client-error.js';
import { forward, type Outcome } from './forward.js';
import { promptText, sessionKey } from './prompt.js';
import { discardBody, readBody } from './read-body.js';
import { sendError, sendJson } from './respond.js';
import { maxTokensFault, parseRequestBody, validateRequest } from './validation/index.js';

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
}

const INFERENCE_PATHS = new Set(['/v1/chat/completions', '/v1/completions', '/v1/embeddings']);
const PROFILE_HEADER = 'x-llmgw-profile';
const PRIORITY_HEADER = 'x-llmgw-priority';
/** How much of an oversized body is read and dropped so its sender can read the 413. */
const DISCARD_MAX_BYTES = 64 * 1024 * 1024;
const DISCARD_MAX_MS = 10_000;
const EMPTY = Buffer.alloc(0);
const log = createLogger('dataport');

/** A request that passed validation, on its way to an engine. */
interface Job {
  req: IncomingMessage;
  /** The body as received: sent on as it is when nothing in it had to change. */
  raw: Buffer;
  res: ServerResponse;
  path: string;
  body: Record<string, unknown>;
  stream: boolean;
  stripUsage: boolean;
  entry: CatalogEntry;
  profile: Profile;
  prefix: Float64Array | null;
  session: string | null;
  record: UsageRecord;
  arrived: number;
  /** Called once the request counts in an endpoint's in-flight (its first attempt is sent). */
  onSent: (() => void) | null;
}

/**
 * The OpenAI-compatible port clients talk to. It validates the request, resolves the
 * model, lets the scheduler pick an endpoint, and streams the engine's answer straight
 * through; failures before the first byte are retried elsewhere, then fall back to the
 * model's fallbacks in order. Everything here runs on the main thread and reads the
 * endpoint table synchronously: nothing on the request path waits on another thread.
 */
export function createDataPort(opts: DataPortOptions): Server {
  const created = Math.floor(Date.now() / 1000);
  const { router } = opts;

  const handle = async (req: IncomingMessage, res: ServerResponse, arrived: number): Promise<void> => {
    const path = (req.url ?? '/').split('?', 1)[0]!;
    if (path === '/health') return sendJson(res, 200, { status: 'ok' });
    if (path === '/v1/models') {
      if (req.method !== 'GET') return sendError(res, new LlmgwError('LLMGW_METHOD_NOT_ALLOWED', `${req.method} is not allowed on ${path}; use GET`));
      return sendJson(res, 200, {
        object: 'list',
        data: opts.catalog.names().map((id) => ({ id, object: 'model', created, owned_by: 'llmgw' })),
      });
    }
    if (!INFERENCE_PATHS.has(path)) return sendError(res, new LlmgwError('LLMGW_NOT_FOUND', `no route for ${req.method} ${path}`));
    if (req.method !== 'POST') return sendError(res, new LlmgwError('LLMGW_METHOD_NOT_ALLOWED', `${req.method} is not allowed on ${path}; use POST`));

    const requestId = requestIdOf(req);
    const record = newRecord(requestId, path);
    const refuse = (err: LlmgwError, param: string | null = null, headers: Record<string, string> = {}): void => {
      sendError(res, err, param, { 'x-request-id': requestId, ...headers });
      finish(record, err.status, err.code, arrived);
    };

    let raw: Buffer;
    try {
      raw = await readBody(req, router.max_body_bytes);
    } catch (err) {
      // Let the client finish sending (within bounds) so that it reads the 413, then
      // close the connection: what is left of a body past the bounds is not worth reading.
      await discardBody(req, DISCARD_MAX_BYTES, DISCARD_MAX_MS);
      return refuse(LlmgwError.from(err), null, { connection: 'close' });
    }
    const parsed = parseRequestBody(raw, req.headers['content-type']);
    if (!('body' in parsed)) return refuse(new LlmgwError('LLMGW_INVALID_REQUEST', parsed.message), parsed.param);
    const body = parsed.body;
    if (typeof body.model === 'string') record.modelAsked = body.model;
    const fault = validateRequest(path, body);
    if (fault) return refuse(new LlmgwError('LLMGW_INVALID_REQUEST', fault.message), fault.param);
    const model = body.model as string;
    const entry = opts.catalog.resolve(model);
    if (!entry) {
      return refuse(new LlmgwError('LLMGW_MODEL_NOT_FOUND', `the model '${model}' does not exist; available: ${opts.catalog.names().join(', ')}`), 'model');
    }
    const tooLong = path === '/v1/embeddings' ? null : maxTokensFault(body, opts.table.maxModelLen(entry.name));
    if (tooLong) return refuse(new LlmgwError('LLMGW_CONTEXT_TOO_LONG', tooLong.message), tooLong.param);
    const asked = req.headers[PROFILE_HEADER];
    const profileName = typeof asked === 'string' && asked !== '' ? asked : opts.modelProfiles.get(entry.name) ?? router.default_profile;
    const profile = opts.profiles.get(profileName);
    if (!profile) {
      return refuse(new LlmgwError('LLMGW_INVALID_REQUEST', `${PROFILE_HEADER}: '${profileName}' is not a routing profile; have: ${[...opts.profiles.keys()].join(', ')}`));
    }
    record.profile = profile.name;

    const admission = opts.admissions?.get(entry.name);
    let band = -1;
    if (admission) {
      const name = bandOf(req, profile);
      band = bandIndex.get(name) ?? -1;
      if (band === -1) return refuse(new LlmgwError('LLMGW_INVALID_REQUEST', `${PRIORITY_HEADER}: '${name}' is not a band; have: ${bandNames.join(', ')}`));
      record.band = name;
    }

    const stream = body.stream === true;
    record.stream = stream;
    // Always ask the engine for usage, so accounting does not depend on the client.
    let stripUsage = false;
    let edited = body.model !== entry.name;
    if (stream && path !== '/v1/embeddings') {
      const so = body.stream_options;
      const wants = typeof so === 'object' && so !== null && (so as { include_usage?: unknown }).include_usage === true;
      if (!wants) {
        stripUsage = edited = true;
        body.stream_options = { ...(typeof so === 'object' && so !== null ? so : {}), include_usage: true };
      }
    }

    // A request released from the queue counts as load in transit until an endpoint
    // counts it in flight: in between, others must not be released into the same room.
    let sent: (() => void) | null = null;
    if (admission && !admission.tryAdmit(band, Date.now())) {
      if (log.enabled('debug')) log.debug('queued', { request: record.id, model: entry.name, band: record.band, why: admission.holdReason(band, Date.now()) });
      if (!(await queue(admission, band, req, res, record, arrived))) return;
      let inTransit = true;
      sent = () => {
        if (inTransit) admission.dispatched();
        inTransit = false;
      };
    }
    try {
      const prefix = profile.terms.some((t) => t.scorer.name === 'prefix') ? await prefixOf(path, body) : null;
      await dispatch({ req, raw: edited ? EMPTY : raw, res, path, body, stream, stripUsage, entry, profile, prefix, session: sessionKey(req, body), record, arrived, onSent: sent });
    } finally {
      sent?.();
      // Whatever the ending, the request no longer holds capacity: those waiting may go.
      admission?.finished(band, Date.now());
    }
  };

  const admissionCfg = router.admission;
  const bandNames = admissionCfg.bands.map((b) => b.name);
  const bandIndex = new Map(bandNames.map((n, i) => [n, i]));
  const defaultBand = admissionCfg.default_band ?? bandNames[Math.max(0, bandNames.length - 2)]!;

  /** The band: the API key's (once keys exist), else the profile's, else the header where allowed, else the default. */
  const bandOf = (req: IncomingMessage, profile: Profile): string => {
    if (profile.band !== null) return profile.band;
    const h = req.headers[PRIORITY_HEADER];
    if (admissionCfg.priority_header && typeof h === 'string' && h !== '') return h;
    return defaultBand;
  };

  /**
   * Waits in the admission queue; true when released (the caller then reports it
   * `dispatched` once sent), false when the request was answered (shed, timed out,
   * client gone).
   */
  const queue = async (admission: Admission, band: number, req: IncomingMessage, res: ServerResponse, record: UsageRecord, arrived: number): Promise<boolean> => {
    const left = new AbortController();
    const onClose = (): void => left.abort();
    res.on('close', onClose);
    const queuedAt = performance.now();
    let released: boolean;
    try {
      released = await admission.wait(band, Date.now(), left.signal);
    } catch (err) {
      record.queueMs = performance.now() - queuedAt;
      const e = LlmgwError.from(err);
      sendError(res, e, null, { 'retry-after': '1', 'x-request-id': record.id });
      finish(record, e.status, e.code, arrived);
      return false;
    } finally {
      res.off('close', onClose);
    }
    record.queueMs = performance.now() - queuedAt;
    if (left.signal.aborted) {
      // The client went away while queued (or just as it was released): nobody to answer.
      if (released) {
        admission.dispatched();
        admission.finished(band, Date.now());
      }
      finish(record, 499, null, arrived);
      return false;
    }
    return released;
  };

  const prefixOf = async (path: string, body: Record<string, unknown>): Promise<Float64Array | null> => {
    const text = promptText(path, body);
    if (text === null || text.length < router.prefix.block_chars) return null;
    const input = { text, blockChars: router.prefix.block_chars, maxBlocks: router.prefix.max_blocks };
    // Hashing costs the main thread ~2.5 µs per KB; past offload_bytes the pool's hop is cheaper.
    return text.length > router.prefix.offload_bytes ? opts.cpu.run<Float64Array>('hashPrefix', input) : hashPrefix(input);
  };

  const dispatch = async (job: Job): Promise<void> => {
    const { record, res } = job;
    const tried: EndpointState[] = [];
    const models = [job.entry.name, ...job.entry.fallbacks.map((f) => opts.catalog.resolve(f)?.name ?? f)];
    let lastError: LlmgwError | null = null;

    for (let m = 0; m < models.length && tried.length < router.retries.max_attempts; m++) {
      const model = models[m]!;
      const endpoints = opts.table.forModel(model);
      let payload: string | Buffer | null = null;
      while (tried.length < router.retries.max_attempts) {
        const route: RouteRequest = { model, prefix: job.prefix, session: job.session, tried, now: Date.now() };
        const t0 = performance.now();
        const ep = opts.scheduler.pick(endpoints, route, job.profile);
        record.scheduleMicros += (performance.now() - t0) * 1000;
        if (!ep) break; // nothing (left) for this model: its fallback, if any
        if (log.enabled('debug')) log.debug('picked', { request: record.id, model, endpoint: ep.id, profile: job.profile.name, scores: opts.scheduler.explain(ep) });
        if (job.prefix) opts.prefixIndex.record(job.prefix, ep.id);
        tried.push(ep);
        record.attempts = tried.length;
        record.endpoint = ep.id;
        record.modelServed = model;
        record.fallback = m > 0;
        if (payload === null) {
          // Re-serialising an 8 KB prompt costs the main thread ~10 µs: skip it when the
          // client already named the model that serves and nothing was added.
          if (model === job.body.model && job.raw.length > 0) payload = job.raw;
          else {
            job.body.model = model;
            payload = JSON.stringify(job.body);
          }
        }
        const sending = forward(ep, {
          req: job.req,
          res,
          path: job.path,
          payload,
          stream: job.stream,
          stripUsage: job.stripUsage,
          requestId: record.id,
          arrived: job.arrived,
          firstTokenTimeoutMs: router.first_token_timeout_ms,
          idleTimeoutMs: router.idle_timeout_ms,
        });
        // forward() counted it in the endpoint's in-flight before its first await.
        job.onSent?.();
        const outcome = await sending;
        if (outcome.kind === 'failed' && outcome.retry && !res.destroyed) {
          log.warn('attempt failed, trying another endpoint', { request: record.id, endpoint: ep.id, error: outcome.error.message });
          lastError = outcome.error;
          continue;
        }
        return settle(job, outcome);
      }
    }
    if (lastError) {
      record.modelServed = null;
      return settle(job, { kind: 'failed', error: lastError, retry: false });
    }
    record.modelServed = null;
    record.endpoint = null;
    const why = models
      .flatMap((model) => opts.scheduler.rejections(opts.table.forModel(model), { model, prefix: null, session: null, tried, now: Date.now() }).map((r) => `${r.id}: ${r.reason}`))
      .join('; ');
    const names = models.length > 1 ? `'${job.entry.name}' or its fallbacks (${job.entry.fallbacks.join(', ')})` : `'${job.entry.name}'`;
    const err = new LlmgwError('LLMGW_NO_ENDPOINT', `no endpoint can serve ${names} now${why ? ` (${why})` : ' (no endpoint serves it)'}; retry shortly`);
    sendError(res, err, null, { 'retry-after': '1', 'x-request-id': record.id });
    finish(record, err.status, err.code, job.arrived);
  };

  const settle = (job: Job, outcome: Outcome): void => {
    const { record } = job;
    switch (outcome.kind) {
      case 'served':
        if (outcome.usage) {
          record.promptTokens = outcome.usage.promptTokens;
          record.completionTokens = outcome.usage.completionTokens;
          record.cachedTokens = outcome.usage.cachedTokens;
        }
        record.ttftMs = outcome.ttftMs;
        return finish(record, outcome.status, null, job.arrived);
      case 'failed':
        sendError(job.res, outcome.error, null, { 'x-request-id': record.id, ...(record.endpoint ? { 'x-llmgw-endpoint': record.endpoint } : {}) });
        return finish(record, outcome.error.status, outcome.error.code, job.arrived);
      case 'broken':
        record.ttftMs = outcome.ttftMs;
        log.warn('response broken mid-way', { request: record.id, endpoint: record.endpoint, error: outcome.error.message });
        return finish(record, 200, outcome.error.code, job.arrived);
      case 'gone':
        record.ttftMs = outcome.ttftMs;
        return finish(record, 499, null, job.arrived);
    }
  };

  const finish = (record: UsageRecord, status: number, error: string | null, arrived: number): void => {
    record.status = status;
    record.error = error;
    record.durationMs = performance.now() - arrived;
    try {
      opts.usage(record);
    } catch (err) {
      log.error('usage record lost', { request: record.id, error: err });
    }
  };

  const server = createServer((req, res) => {
    const arrived = performance.now();
    handle(req, res, arrived).catch((err: unknown) => {
      log.error('request failed', { error: err });
      sendError(res, LlmgwError.from(err));
    });
  });
  server.on('clientError', answerClientError);
  return server;
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
    ttftMs: null,
    durationMs: 0,
    queueMs: 0,
    band: null,
    attempts: 0,
    scheduleMicros: 0,
    profile: '',
  };
}
