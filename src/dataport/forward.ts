// One attempt to serve a request from one endpoint. The response head is held back
// until the engine's first body chunk arrives: until then nothing has reached the
// client, so a failure (refused connection, a 5xx, a connection dropped before the
// first token) can still be retried on another endpoint. After it, a failure ends the
// stream with an error event instead.

import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { LlmgwError } from '../errors.js';
import type { EndpointState } from '../router/endpoint-table.js';
import { JsonUsageTap, SseUsageTap, type Usage, type UsageTap } from './usage-tap.js';

export interface ForwardRequest {
  req: IncomingMessage;
  res: ServerResponse;
  path: string;
  payload: string | Buffer;
  stream: boolean;
  /** Drop the usage-only chunk: the router asked for it, not the client. */
  stripUsage: boolean;
  requestId: string;
  /** performance.now() at arrival, for TTFT. */
  arrived: number;
  firstTokenTimeoutMs: number;
  idleTimeoutMs: number;
}

export type Outcome =
  /** The engine's answer reached the client whole (whatever its status). */
  | { kind: 'served'; status: number; usage: Usage | null; ttftMs: number }
  /** Nothing reached the client; `retry` says whether another endpoint may be tried. */
  | { kind: 'failed'; error: LlmgwError; retry: boolean }
  /** The client had part of the answer when the engine failed; the response is ended. */
  | { kind: 'broken'; error: LlmgwError; ttftMs: number }
  /** The client went away; the engine's request was cancelled. */
  | { kind: 'gone'; ttftMs: number | null };

const PASSED_HEADERS = ['content-type'] as const;

export async function forward(ep: EndpointState, f: ForwardRequest): Promise<Outcome> {
  const { res } = f;
  const abort = new AbortSwitch();
  let timedOut = false;
  // A client that goes away cancels the engine's work at once (it frees KV blocks).
  const onClose = (): void => {
    if (!res.writableFinished) abort.abort();
  };
  res.on('close', onClose);
  const firstToken = setTimeout(() => {
    timedOut = true;
    abort.abort();
  }, f.firstTokenTimeoutMs);
  const started = Date.now();
  ep.inflight++;
  ep.inflightLog.started(started);
  ep.health.begin(started);
  let ttftMs: number | null = null;

  const early = (err: unknown): Outcome => {
    if (timedOut) {
      ep.health.failed(Date.now());
      const e = new LlmgwError('LLMGW_UPSTREAM_TIMEOUT', `endpoint ${ep.id} sent no first token within ${f.firstTokenTimeoutMs} ms`);
      // Not retried: the request may be what is slow, and a retry would double its cost.
      return { kind: 'failed', error: e, retry: false };
    }
    if (abort.aborted) {
      ep.health.abandoned();
      return { kind: 'gone', ttftMs: null };
    }
    ep.health.failed(Date.now());
    return { kind: 'failed', error: new LlmgwError('LLMGW_UPSTREAM_FAILED', `endpoint ${ep.id} failed: ${describe(err)}`), retry: true };
  };

  try {
    let upstream;
    try {
      upstream = await ep.http.request({
        path: f.path,
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: f.req.headers.accept ?? '*/*', 'x-request-id': f.requestId },
        body: f.payload,
        signal: abort,
        headersTimeout: 0, // the first-token timer covers the head and the first chunk
        bodyTimeout: f.idleTimeoutMs,
      });
    } catch (err) {
      return early(err);
    }
    const status = upstream.statusCode;
    const body = upstream.body;
    if (status >= 500) {
      const text = await body.text().catch(() => '');
      ep.health.failed(Date.now());
      const error = new LlmgwError('LLMGW_UPSTREAM_FAILED', `endpoint ${ep.id} answered ${status}${text ? `: ${text.slice(0, 200)}` : ''}`);
      return { kind: 'failed', error, retry: true };
    }

    const chunks = body[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
    let first: IteratorResult<Buffer>;
    try {
      first = await chunks.next();
    } catch (err) {
      return early(err);
    }
    clearTimeout(firstToken);

    const headers: Record<string, string> = { 'x-llmgw-endpoint': ep.id, 'x-request-id': f.requestId };
    for (const h of PASSED_HEADERS) {
      const v = upstream.headers[h];
      if (typeof v === 'string') headers[h] = v;
    }
    const sse = f.stream && status === 200;
    if (sse) headers['cache-control'] = 'no-cache';
    res.writeHead(status, headers);
    ttftMs = performance.now() - f.arrived;
    const tap: UsageTap = sse ? new SseUsageTap(f.stripUsage) : new JsonUsageTap();

    try {
      let next = first;
      while (!next.done) {
        const out = tap.push(next.value);
        if (out.length > 0 && !res.write(out)) await drained(res);
        if (abort.aborted) break;
        next = await chunks.next();
      }
    } catch (err) {
      if (abort.aborted && !timedOut) {
        ep.health.abandoned();
        return { kind: 'gone', ttftMs };
      }
      ep.health.failed(Date.now());
      const error = new LlmgwError('LLMGW_UPSTREAM_FAILED', `endpoint ${ep.id} failed mid-response: ${describe(err)}`);
      if (sse && !res.writableEnded) res.end(`${tap.end()}data: ${JSON.stringify(error.toOpenAI())}\n\ndata: [DONE]\n\n`);
      else res.destroy(); // a JSON body cut short cannot be repaired; a reset says so
      return { kind: 'broken', error, ttftMs };
    }
    if (abort.aborted) {
      ep.health.abandoned();
      return { kind: 'gone', ttftMs };
    }
    res.end(tap.end());
    ep.health.succeeded();
    return { kind: 'served', status, usage: tap.usage, ttftMs };
  } finally {
    clearTimeout(firstToken);
    ep.inflight--;
    ep.inflightLog.ended(Date.now());
    res.off('close', onClose);
  }
}

/** Resolves when the client can take more, or has gone. */
function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

function describe(err: unknown): string {
  const e = err as { code?: string; message?: string; cause?: { code?: string; message?: string } };
  const code = e.code ?? e.cause?.code;
  const message = e.cause?.message ?? e.message ?? String(err);
  return code && !message.includes(code) ? `${message} (${code})` : message;
}

/**
 * Cancels one upstream request. undici takes an EventEmitter with `aborted` as its
 * signal; an AbortController's EventTarget cost ~4 µs a request (2.6% of the main
 * thread at c=32 in a profile) for the same one-shot event.
 */
class AbortSwitch extends EventEmitter {
  aborted = false;

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.emit('abort');
  }
}
