import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { errors as undiciErrors } from 'undici';
import { LlmgwError } from '../errors.js';
import { createLogger } from '../log.js';
import type { Catalog, CatalogEntry } from '../router/catalog.js';
import type { EndpointState, EndpointTable } from '../router/endpoint-table.js';
import { readBody } from './read-body.js';
import { sendError, sendJson } from './respond.js';

export interface DataPortOptions {
  catalog: Catalog;
  table: EndpointTable;
  maxBodyBytes: number;
  firstTokenTimeoutMs: number;
  idleTimeoutMs: number;
}

const INFERENCE_PATHS = new Set(['/v1/chat/completions', '/v1/completions', '/v1/embeddings']);
const log = createLogger('dataport');

/**
 * The OpenAI-compatible port clients talk to. It validates the request, resolves the
 * model, picks a ready endpoint and streams the engine's answer straight through.
 */
export function createDataPort(opts: DataPortOptions): Server {
  const rr = new Map<string, number>();
  const created = Math.floor(Date.now() / 1000);

  const pick = (entry: CatalogEntry): { endpoint: EndpointState; served: string } | undefined => {
    // The model itself first, then its fallbacks in order.
    for (const name of [entry.name, ...entry.fallbacks]) {
      const target = opts.catalog.resolve(name);
      if (!target) continue;
      const ready = opts.table.forModel(target.name).filter((e) => e.ready);
      if (ready.length === 0) continue;
      const n = rr.get(target.name) ?? 0;
      rr.set(target.name, n + 1);
      return { endpoint: ready[n % ready.length]!, served: target.name };
    }
    return undefined;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
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

    let raw: Buffer;
    try {
      raw = await readBody(req, opts.maxBodyBytes);
    } catch (err) {
      // The rest of an oversized body is not read: close the connection after answering.
      return sendError(res, LlmgwError.from(err), null, { connection: 'close' });
    }
    let body: Record<string, unknown>;
    try {
      const parsed: unknown = JSON.parse(raw.toString('utf8'));
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object');
      body = parsed as Record<string, unknown>;
    } catch {
      return sendError(res, new LlmgwError('LLMGW_INVALID_REQUEST', 'the request body is not a JSON object; send Content-Type: application/json with a JSON object body'));
    }
    if (typeof body.model !== 'string' || body.model === '') {
      return sendError(res, new LlmgwError('LLMGW_INVALID_REQUEST', "the request has no 'model'; name one of GET /v1/models"), 'model');
    }
    if (body.stream !== undefined && typeof body.stream !== 'boolean') {
      return sendError(res, new LlmgwError('LLMGW_INVALID_REQUEST', `'stream' must be true or false, not ${JSON.stringify(body.stream)}`), 'stream');
    }
    const entry = opts.catalog.resolve(body.model);
    if (!entry) {
      return sendError(
        res,
        new LlmgwError('LLMGW_MODEL_NOT_FOUND', `the model '${body.model}' does not exist; available: ${opts.catalog.names().join(', ')}`),
        'model',
      );
    }
    const choice = pick(entry);
    if (!choice) {
      const why = opts.table
        .forModel(entry.name)
        .map((e) => `${e.id}: ${e.reason ?? 'not ready'}`)
        .join('; ');
      return sendError(res, new LlmgwError('LLMGW_NO_ENDPOINT', `no ready endpoint serves '${entry.name}'${why ? ` (${why})` : ''}; retry shortly`), null, { 'retry-after': '1' });
    }
    body.model = choice.served;
    await forward(req, res, path, JSON.stringify(body), choice.endpoint, body.stream === true);
  };

  const forward = async (req: IncomingMessage, res: ServerResponse, path: string, payload: string, ep: EndpointState, stream: boolean): Promise<void> => {
    const abort = new AbortController();
    // A client that goes away cancels the engine's work at once (it frees KV blocks).
    res.on('close', () => {
      if (!res.writableFinished) abort.abort();
    });
    ep.inflight++;
    try {
      const upstream = await ep.pool.request({
        path,
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: req.headers.accept ?? '*/*' },
        body: payload,
        signal: abort.signal,
        headersTimeout: opts.firstTokenTimeoutMs,
        bodyTimeout: opts.idleTimeoutMs,
      });
      const headers: Record<string, string> = { 'x-llmgw-endpoint': ep.id };
      const type = upstream.headers['content-type'];
      if (typeof type === 'string') headers['content-type'] = type;
      if (stream) headers['cache-control'] = 'no-cache';
      res.writeHead(upstream.statusCode, headers);
      try {
        await pipeline(upstream.body, res);
      } catch (err) {
        if (abort.signal.aborted) return;
        log.warn('upstream failed mid-response', { endpoint: ep.id, error: err });
        if (stream && !res.writableEnded) {
          const e = new LlmgwError('LLMGW_UPSTREAM_FAILED', `endpoint ${ep.id} failed mid-stream: ${(err as Error).message}`);
          res.end(`data: ${JSON.stringify(e.toOpenAI())}\n\ndata: [DONE]\n\n`);
        } else {
          res.destroy();
        }
      }
    } catch (err) {
      if (abort.signal.aborted) return;
      const timeout = err instanceof undiciErrors.HeadersTimeoutError || err instanceof undiciErrors.ConnectTimeoutError;
      const e = new LlmgwError(
        timeout ? 'LLMGW_UPSTREAM_TIMEOUT' : 'LLMGW_UPSTREAM_FAILED',
        `endpoint ${ep.id} ${timeout ? 'timed out' : 'failed'}: ${(err as Error).message}`,
      );
      log.warn('upstream request failed', { endpoint: ep.id, error: err });
      sendError(res, e, null, { 'x-llmgw-endpoint': ep.id });
    } finally {
      ep.inflight--;
    }
  };

  return createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      log.error('request failed', { error: err });
      sendError(res, LlmgwError.from(err));
    });
  });
}
