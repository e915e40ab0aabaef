// The simulated engine's HTTP face: the subset of vLLM's OpenAI server that llmgw and its
// clients touch — chat/completions (streaming or not), /v1/models, /health, /metrics,
// /tokenize, and SGLang's /server_info for that flavor — with vLLM's error shape
// (≥ 0.10.1): `{"error":{"message","type","param","code"}}` where `code` is the HTTP
// status as an int. node:http only: it must start in milliseconds,
// in a process of its own or inside the gateway's worker threads.

import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer } from 'node:http';
import { LlmgwError } from '../errors.js';
import { clientGone } from '../net/client-gone.js';
import { createLogger } from '../log.js';
import type { SimEngine } from './engine.js';
import { BLOCK_SIZE } from './kv-cache.js';
import type { SimFlavor, SimMetrics } from './metrics.js';
import type { GenerationRequest, ServedModel } from './requests.js';
import { parseChatRequest, parseCompletionRequest, parseTokenizeRequest } from './requests.js';
import { respondGeneration } from './responder.js';

const log = createLogger('sim.http');

/** Request bodies above this are refused with 413 (a 32k-token prompt is well under 1 MiB). */
export const DEFAULT_BODY_LIMIT = 32 * 1024 * 1024;

/** How long the rest of an oversized body is read and dropped before the connection is cut. */
const DRAIN_MS = 10_000;

export interface SimHttpOptions {
  engine: SimEngine;
  metrics: SimMetrics;
  model: string;
  flavor: SimFlavor;
  seed: number;
  bodyLimitBytes?: number | undefined;
  /** Trust the input as a careless engine would: see `crashOn`. */
  fragile?: FragileOptions | undefined;
  /** With the sglang flavor, serve `/server_info` (and its old name `/get_server_info`). */
  serverInfo?: boolean | undefined;
}

/**
 * A fragile engine, for proving the gateway in front of it: a body whose standard fields
 * have the wrong types or ranges crashes the engine instead of getting a 400, and so
 * does a valid request whose prompt contains `poisonMarker` (a crash-on-input bug that
 * no schema can catch).
 */
export interface FragileOptions {
  poisonMarker: string | null;
}

type Handler = (req: IncomingMessage, res: ServerResponse) => Promise<void> | void;

interface Route {
  methods: readonly string[];
  handle: Handler;
}

export function createSimHttpServer(o: SimHttpOptions): Server {
  const served: ServedModel = { name: o.model, maxModelLen: o.engine.maxModelLen, priorityScheduling: o.engine.schedulingPolicy === 'priority' };
  const bodyLimit = o.bodyLimitBytes ?? DEFAULT_BODY_LIMIT;
  const createdAt = Math.floor(Date.now() / 1000);
  const ctx = { engine: o.engine, model: o.model, engineSeed: o.seed };

  const generation = (parse: typeof parseChatRequest): Handler => async (req, res) => {
    const body = await readJson(req, bodyLimit);
    const gen = o.fragile ? crashOn(o.fragile, body, () => parse(body, served)) : parse(body, served);
    // The client left while we read its body: its 'close' has fired (or will, a turn
    // late, after its connection ended), nobody would abort.
    if (res.closed || clientGone(req, res)) return;
    if (o.engine.isClosed) throw new LlmgwError('LLMGW_SHUTTING_DOWN', 'The engine is shutting down');
    respondGeneration(ctx, gen, res, requestIdOf(req));
  };

  // The settings SGLang publishes that a router reads, under its argument names: the
  // batch size, the chunk size (-1: no chunking) and the priority policy, which the sim
  // runs as vLLM does (lower values first).
  const serverInfo: Route = {
    methods: ['GET'],
    handle: (_req, res) => {
      const e = o.engine;
      const args = {
        served_model_name: o.model,
        max_running_requests: e.maxNumSeqs,
        chunked_prefill_size: Number.isFinite(e.maxNumBatchedTokens) ? e.maxNumBatchedTokens : -1,
        schedule_policy: 'fcfs',
        enable_priority_scheduling: e.schedulingPolicy === 'priority',
        schedule_low_priority_values_first: e.schedulingPolicy === 'priority',
        dp_size: 1,
      };
      sendJson(res, 200, { ...args, max_total_num_tokens: e.kv.numBlocks * BLOCK_SIZE, internal_states: [{ ...args, effective_max_running_requests_per_dp: e.maxNumSeqs }], version: 'sim' });
    },
  };

  const routes: Record<string, Route> = {
    '/v1/chat/completions': { methods: ['POST'], handle: generation(parseChatRequest) },
    '/v1/completions': { methods: ['POST'], handle: generation(parseCompletionRequest) },
    '/v1/models': {
      methods: ['GET'],
      handle: (_req, res) =>
        sendJson(res, 200, {
          object: 'list',
          data: [
            {
              id: o.model,
              object: 'model',
              created: createdAt,
              owned_by: o.flavor,
              root: o.model,
              parent: null,
              max_model_len: o.engine.maxModelLen,
              permission: [
                {
                  id: `modelperm-${o.model}`,
                  object: 'model_permission',
                  created: createdAt,
                  allow_create_engine: false,
                  allow_sampling: true,
                  allow_logprobs: true,
                  allow_search_indices: false,
                  allow_view: true,
                  allow_fine_tuning: false,
                  organization: '*',
                  group: null,
                  is_blocking: false,
                },
              ],
            },
          ],
        }),
    },
    '/health': {
      methods: ['GET', 'HEAD'],
      handle: (_req, res) => {
        res.writeHead(200, { 'content-length': 0 });
        res.end();
      },
    },
    '/metrics': {
      methods: ['GET'],
      handle: async (_req, res) => {
        const text = await o.metrics.render();
        res.writeHead(200, { 'content-type': o.metrics.contentType, 'content-length': Buffer.byteLength(text) });
        res.end(text);
      },
    },
    ...(o.flavor === 'sglang' && o.serverInfo && { '/server_info': serverInfo, '/get_server_info': serverInfo }),
    '/tokenize': {
      methods: ['POST'],
      handle: async (req, res) => {
        const tokens = parseTokenizeRequest(await readJson(req, bodyLimit), served);
        sendJson(res, 200, { count: tokens.length, max_model_len: o.engine.maxModelLen, tokens, token_strs: null });
      },
    },
  };

  const server = createServer({ noDelay: true }, (req, res) => {
    const path = (req.url ?? '/').split('?', 1)[0]!;
    const route = Object.hasOwn(routes, path) ? routes[path] : undefined;
    const run = async (): Promise<void> => {
      if (!route) throw new LlmgwError('LLMGW_NOT_FOUND', `Not Found: no route ${path}`);
      if (!route.methods.includes(req.method ?? '')) {
        res.setHeader('allow', route.methods.join(', '));
        throw new LlmgwError('LLMGW_METHOD_NOT_ALLOWED', `Method Not Allowed: ${path} accepts ${route.methods.join(', ')}, not ${req.method}`);
      }
      await route.handle(req, res);
    };
    run().catch((err: unknown) => sendError(res, err));
  });
  return server;
}

function crashOn(fragile: FragileOptions, body: unknown, parse: () => GenerationRequest): GenerationRequest {
  let gen: GenerationRequest;
  try {
    gen = parse();
  } catch (err) {
    // A field of the wrong type or range; the engine's own semantic refusals (context too long, unknown model) stay 400s.
    if (err instanceof LlmgwError && err.code === 'LLMGW_INVALID_REQUEST') crash(`a bad field: ${err.message}`);
    throw err;
  }
  const b = body as { messages?: unknown; prompt?: unknown };
  if (fragile.poisonMarker !== null && JSON.stringify(b.messages ?? b.prompt ?? '').includes(fragile.poisonMarker)) crash('a poisoned prompt');
  return gen;
}

/** Exits at once, answering nothing, as a crashed engine does (70: EX_SOFTWARE). */
function crash(why: string): never {
  process.stderr.write(`fragile engine crashed on ${why}\n`);
  process.exit(70);
}

/** vLLM's `type` for an error status (its `err_type` names). */
function errorType(status: number): string {
  switch (status) {
    case 400:
      return 'BadRequestError';
    case 404:
      return 'NotFoundError';
    case 405:
      return 'MethodNotAllowedError';
    case 413:
      return 'RequestEntityTooLargeError';
    case 503:
      return 'ServiceUnavailableError';
    default:
      return 'InternalServerError';
  }
}

function sendError(res: ServerResponse, err: unknown): void {
  const e = LlmgwError.from(err);
  if (e.status >= 500) log.error('request failed', { err: e, details: e.details });
  if (res.headersSent) {
    // Too late for a status line: cut the response so the client sees it failed.
    res.destroy();
    return;
  }
  if (res.destroyed) return;
  const param = typeof e.details?.['param'] === 'string' ? e.details['param'] : null;
  sendJson(res, e.status, { error: { message: e.message, type: errorType(e.status), param, code: e.status } });
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const json = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) });
  res.end(json);
}

/** vLLM bases its response id on the client's X-Request-Id when there is one. */
function requestIdOf(req: IncomingMessage): string {
  const h = req.headers['x-request-id'];
  const v = Array.isArray(h) ? h[0] : h;
  return v && /^[\w.:-]{1,128}$/.test(v) ? v : randomUUID().replaceAll('-', '');
}

async function readJson(req: IncomingMessage, limit: number): Promise<unknown> {
  const buf = await readBody(req, limit);
  if (buf.length === 0) throw new LlmgwError('LLMGW_INVALID_REQUEST', 'The request body is empty; expected a JSON object');
  try {
    return JSON.parse(buf.toString('utf8'));
  } catch (err) {
    throw new LlmgwError('LLMGW_INVALID_REQUEST', `The request body is not valid JSON: ${(err as Error).message}`);
  }
}

/**
 * The whole body, or a 413 once it passes `limit`. After a 413 the rest of the body is
 * still read and dropped: closing the socket instead would make a client that is still
 * uploading see EPIPE/ECONNRESET rather than the answer. A body that keeps coming for
 * DRAIN_MS after that gets its connection cut.
 */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const tooLarge = (): LlmgwError => {
      const guard = setTimeout(() => req.socket.destroy(), DRAIN_MS);
      guard.unref();
      req.once('end', () => clearTimeout(guard));
      req.once('close', () => clearTimeout(guard));
      req.resume();
      return new LlmgwError('LLMGW_BODY_TOO_LARGE', `The request body is larger than the limit of ${limit} bytes`);
    };
    if (Number(req.headers['content-length'] ?? 0) > limit) {
      reject(tooLarge());
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (fn: () => void): void => {
      if (settled) return;
      settled = true;
      fn();
    };
    req.on('data', (chunk: Buffer) => {
      if (settled) return;
      size += chunk.length;
      if (size > limit) {
        chunks.length = 0;
        settle(() => reject(tooLarge()));
      } else chunks.push(chunk);
    });
    req.on('end', () => settle(() => resolve(Buffer.concat(chunks, size))));
    req.on('error', (err) => settle(() => reject(err)));
    req.on('close', () => settle(() => reject(new LlmgwError('LLMGW_INVALID_REQUEST', 'The client closed the connection before sending the whole body'))));
  });
}
