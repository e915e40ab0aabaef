// One attempt to serve a request from one endpoint. The response head is held back
// until the engine's first body chunk arrives: until then nothing has reached the
// client, so a failure (refused connection, a 5xx, a connection dropped before the
// first token) can still be retried on another endpoint. After it, a failure ends the
// stream with an error event instead. An answer the client wants whole, asked of the
// engine as a stream, is collected (`collect`) and is retryable until it is sent.

import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { LlmgwError } from '../errors.js';
import type { Lease } from '../router/endpoint-table.js';
import { onClientGone } from '../net/client-gone.js';
import { rewrapEngineError } from './engine-error.js';
import { MAX_COLLECTED_BYTES, StreamedAnswer } from './streamed-answer.js';
import { JsonUsageTap, SseUsageTap, type Usage, type UsageTap } from './usage-tap.js';

export interface AttemptRequest {
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
  /**
   * The engine was asked to stream an answer the client wants whole (`streamed-answer.ts`):
   * it is collected and sent as one JSON body.
   */
  collect: boolean;
  /**
   * Called once at the engine's first token: for a JSON answer with its head, unless it
   * was asked for as a stream (admission then counts it as sent whole, until it ends).
   */
  onFirstToken: () => void;
  /** Called once the response head is written: the answer has begun and cannot be retried. */
  onAnswer: () => void;
  /** Set by forward for the attempt's duration: ends the relay (shutdown) with `error`. */
  cut: { now: ((error: LlmgwError) => void) | null };
  /**
   * Called synchronously with the outcome of a served attempt right before the
   * response's last byte is written: what must be recorded before the client can have
   * its whole answer (the usage journal) is recorded there. Null: nothing to do.
   */
  beforeEnd: ((served: Extract<Outcome, { kind: 'served' }>) => void) | null;
  /**
   * Asked after each read of a stream, with the events so far (sent on, or collected): an
   * error ends the stream with it, or stops a collected answer and is the response (a
   * spent budget, with `tenancy.hard_budgets`). Null: never.
   */
  checkStream: ((events: number) => LlmgwError | null) | null;
}

/**
 * What reached the client of a stream that did not end normally, or what the engine had
 * sent of a collected answer when it was stopped: what the request is charged.
 */
export interface Relayed {
  /** SSE events sent on (or collected); each carries about one token on vLLM and SGLang. */
  events: number;
  /** The engine's own report, when its usage chunk had come. */
  usage: Usage | null;
}

export type Outcome =
  /** The engine's answer reached the client whole (whatever its status). */
  | {
      kind: 'served';
      status: number;
      usage: Usage | null;
      ttftMs: number;
      error: string | null;
      /** A stream served whole without the engine's usage (it ignored `include_usage`): what it is charged by instead. */
      generated?: Relayed;
    }
  /**
   * Nothing reached the client; `retry` says whether another endpoint may be tried.
   * `suspect` names the way it failed when the request itself may be what broke the
   * engine (the connection dropped after it was sent, a 5xx): the endpoint's health is
   * then left unreported, for the caller to judge once it knows whether the request
   * fails the same way elsewhere.
   */
  | {
      kind: 'failed';
      error: LlmgwError;
      retry: boolean;
      suspect: string | null;
      /** What the engine generated for a collected answer stopped by the request's budget: it is charged. */
      generated?: Relayed;
    }
  /** The client had part of the answer when the engine failed; the response is ended. */
  | { kind: 'broken'; error: LlmgwError; ttftMs: number; relayed: Relayed | null }
  /** The client went away; the engine's request was cancelled. */
  | { kind: 'gone'; ttftMs: number | null; relayed: Relayed | null }
  /**
   * Admission took the request back from the engine to make way for a first-band request
   * (`Admission.makeWay`), before its first token or while its answer was collected:
   * nothing reached the client; it is to be queued again and sent anew.
   */
  | { kind: 'recalled' };

const PASSED_HEADERS = ['content-type'] as const;
/** The event that ends an OpenAI stream, as vLLM and SGLang write it. */
const DONE_EVENT = 'data: [DONE]';
/** How much of an engine's error body is read to re-wrap it. */
const ERROR_BODY_MAX = 64 * 1024;

export async function attempt(lease: Lease, f: AttemptRequest): Promise<Outcome> {
  const { res } = f;
  const abort = new AbortSwitch();
  let timedOut = false;
  let recalled = false;
  let cutWith: LlmgwError | null = null;
  // Refused once the attempt is ending for another reason: that ending stands.
  lease.whenRecalled(() => {
    if (abort.aborted) return false;
    recalled = true;
    abort.abort();
    return true;
  });
  // A client that goes away cancels the engine's work at once (it frees KV blocks).
  const stopWatching = onClientGone(f.req, res, () => {
    if (!res.writableFinished) abort.abort();
  });
  const firstToken = setTimeout(() => {
    timedOut = true;
    abort.abort();
  }, f.firstTokenTimeoutMs);
  f.cut.now = (error) => {
    cutWith = error;
    abort.abort();
  };
  let ttftMs: number | null = null;
  let tap: UsageTap | null = null;
  let idle: NodeJS.Timeout | undefined;
  let sse = false;
  /** The engine failed after the client had part of the answer: the response ends with the error. */
  const brokenBy = (error: LlmgwError): Outcome => {
    lease.failed(Date.now());
    endBroken(res, sse, tap!, error);
    return { kind: 'broken', error, ttftMs: ttftMs!, relayed: relayedOf(tap!) };
  };

  const early = (err: unknown): Outcome => {
    if (timedOut) {
      lease.failed(Date.now());
      const e = new LlmgwError('LLMGW_UPSTREAM_TIMEOUT', `endpoint ${lease.id} sent no first token within ${f.firstTokenTimeoutMs} ms`);
      // Not retried: the request may be what is slow, and a retry would double its cost.
      return { kind: 'failed', error: e, retry: false, suspect: null };
    }
    if (cutWith) {
      lease.abandoned();
      return { kind: 'failed', error: cutWith, retry: false, suspect: null };
    }
    if (recalled) {
      lease.abandoned();
      return { kind: 'recalled' };
    }
    if (abort.aborted) {
      lease.abandoned();
      return { kind: 'gone', ttftMs: null, relayed: null };
    }
    const suspect = droppedAfterSend(err);
    if (suspect === null) lease.failed(Date.now());
    return { kind: 'failed', error: new LlmgwError('LLMGW_UPSTREAM_FAILED', `endpoint ${lease.id} failed: ${describe(err)}`), retry: true, suspect };
  };

  /** The engine answered with an error status (or sent an error event in place of a stream it was asked for). */
  const engineError = (status: number, text: string): Outcome => {
    lease.committed();
    if (status >= 500) {
      const error = new LlmgwError('LLMGW_UPSTREAM_FAILED', `endpoint ${lease.id} answered ${status}${text ? `: ${text.slice(0, 200)}` : ''}`);
      // 503 says the engine is unavailable (overloaded, starting): its state, not the request's doing.
      if (status === 503) lease.failed(Date.now());
      return { kind: 'failed', error, retry: true, suspect: status === 503 ? null : `status ${status}` };
    }
    // The engine refused the request: its verdict reaches the client in our shape.
    const wrapped = rewrapEngineError(status, text, lease.id);
    const out = JSON.stringify(wrapped);
    f.onFirstToken();
    f.onAnswer();
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(out), 'x-llmgw-endpoint': lease.id, 'x-request-id': f.requestId });
    const served = { kind: 'served', status, usage: null, ttftMs: performance.now() - f.arrived, error: wrapped.error.code } as const;
    f.beforeEnd?.(served);
    res.end(out);
    lease.succeeded(); // it answered, and did so sensibly
    return served;
  };

  /**
   * A non-streamed answer asked of the engine as a stream (`streamed-answer.ts`): its
   * first chunk is the first token; the answer is collected and sent whole. Nothing
   * reached the client until then, so an engine that fails mid-way is retried elsewhere.
   */
  const collect = async (body: { destroy(): void }, chunks: AsyncIterator<Buffer>, first: IteratorResult<Buffer>): Promise<Outcome> => {
    ttftMs = performance.now() - f.arrived;
    f.onFirstToken();
    const answer = new StreamedAnswer();
    let silent = false;
    idle = setTimeout(() => {
      silent = true;
      abort.abort();
    }, f.idleTimeoutMs);
    let dropped: unknown = null;
    let spent: LlmgwError | null = null;
    try {
      for (let next = first; !next.done; next = await chunks.next()) {
        if (!answer.push(next.value)) break;
        // Whole (its `[DONE]` may still be on its way): it is the client's, not to be recalled.
        if (answer.complete) lease.committed();
        spent = f.checkStream?.(answer.events) ?? null;
        if (spent) break;
        idle.refresh();
      }
      answer.end();
    } catch (err) {
      dropped = err;
    }
    // What the engine generated before it was stopped is charged, as a stream is for
    // what reached its client: the GPU did the work either way.
    const generated: Relayed = { events: answer.events, usage: answer.usage };
    // Recalled while it was being collected: nothing reached the client, and it is sent
    // anew; what the engine generated is not charged (`early`).
    if (recalled) return early(null);
    if (spent) {
      body.destroy();
      lease.abandoned();
      return { kind: 'failed', error: spent, retry: false, suspect: null, generated };
    }
    if (cutWith) return early(null);
    if (abort.aborted && !silent) {
      lease.abandoned();
      return { kind: 'gone', ttftMs, relayed: generated };
    }
    // Given up on before its end: the engine must stop generating, and free its slot.
    if (answer.malformed || answer.tooLarge) body.destroy();
    if (answer.error) {
      const { status, body: text, midway } = answer.error;
      // vLLM writes any exception inside its stream as an error event with code 400, its
      // default: one after the answer had begun is the engine failing, not a verdict on
      // the request, and is retried elsewhere as a 5xx would be.
      return engineError(midway && status < 500 ? 500 : status, text);
    }
    if (answer.tooLarge) {
      // The answer is what is too large: retried, it would be as large elsewhere.
      const error = new LlmgwError('LLMGW_UPSTREAM_FAILED', `endpoint ${lease.id} streamed more than ${MAX_COLLECTED_BYTES} bytes for one answer; ask for it as a stream`);
      return { kind: 'failed', error, retry: false, suspect: null };
    }
    if (answer.malformed) {
      lease.failed(Date.now());
      return { kind: 'failed', error: new LlmgwError('LLMGW_UPSTREAM_FAILED', `endpoint ${lease.id} sent ${answer.malformed}`), retry: true, suspect: null };
    }
    if (!answer.complete) {
      if (silent) {
        lease.failed(Date.now());
        const e = new LlmgwError('LLMGW_UPSTREAM_TIMEOUT', `endpoint ${lease.id} sent nothing for ${f.idleTimeoutMs} ms mid-answer (router.idle_timeout_ms)`);
        return { kind: 'failed', error: e, retry: false, suspect: null };
      }
      const why = dropped === null ? 'its stream ended before the answer was whole' : describe(dropped);
      return { kind: 'failed', error: new LlmgwError('LLMGW_UPSTREAM_FAILED', `endpoint ${lease.id} failed mid-answer: ${why}`), retry: true, suspect: 'connection dropped' };
    }
    const out = answer.json();
    f.onAnswer();
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(out), 'x-llmgw-endpoint': lease.id, 'x-request-id': f.requestId });
    const served = { kind: 'served', status: 200, usage: answer.usage, ttftMs, error: null, generated: { events: answer.events, usage: answer.usage } } as const;
    f.beforeEnd?.(served);
    res.end(out);
    lease.succeeded();
    return served;
  };

  try {
    let upstream;
    try {
      upstream = await lease.http.request({
        path: f.path,
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: f.req.headers.accept ?? '*/*', 'x-request-id': f.requestId },
        body: f.payload,
        signal: abort,
        // The first-token timer covers the head and the first chunk; the idle timer below
        // the gaps after it. undici's bodyTimeout would also time the wait for the first
        // chunk, which a long prefill under load can rightly take past the idle limit.
        headersTimeout: 0,
        bodyTimeout: 0,
      });
    } catch (err) {
      return early(err);
    }
    const status = upstream.statusCode;
    const body = upstream.body;
    if (status >= 400) {
      // The engine's verdict: kept, not thrown away by a recall while it is read.
      lease.committed();
      const text = await readText(body).catch(() => '');
      // Cut, timed out or left while the error body was read: that, not the engine's status, is the ending.
      if (abort.aborted) return early(null);
      clearTimeout(firstToken);
      return engineError(status, text);
    }

    const chunks = body[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
    let first: IteratorResult<Buffer>;
    try {
      first = await chunks.next();
    } catch (err) {
      return early(err);
    }
    // Recalled as its first chunk came: what the engine sent is dropped, the request goes again.
    if (recalled) return early(null);
    clearTimeout(firstToken);
    // Tokens stream from here on (not an answer sent whole): the engine runs it until it ends.
    const streamed = status === 200 && String(upstream.headers['content-type']).startsWith('text/event-stream');
    lease.started(streamed);
    // An engine that answers a stream request with JSON anyway has its answer relayed as it is.
    if (f.collect && streamed) return await collect(body, chunks, first);
    // The head goes out now: the answer is the client's.
    lease.committed();

    const headers: Record<string, string> = { 'x-llmgw-endpoint': lease.id, 'x-request-id': f.requestId };
    for (const h of PASSED_HEADERS) {
      const v = upstream.headers[h];
      if (typeof v === 'string') headers[h] = v;
    }
    sse = f.stream && status === 200;
    if (sse) headers['cache-control'] = 'no-cache';
    else {
      // A JSON body is relayed byte for byte: its length holds, and without chunked
      // framing the response ends with its last chunk instead of one more write.
      const length = upstream.headers['content-length'];
      if (typeof length === 'string') headers['content-length'] = length;
    }
    // Asked to stream but answered whole, the answer's first byte is not its first token:
    // admission counts its prefill until it ends, as for any answer sent whole.
    if (!f.collect) f.onFirstToken();
    f.onAnswer();
    res.writeHead(status, headers);
    ttftMs = performance.now() - f.arrived;
    tap = sse ? new SseUsageTap(f.stripUsage) : new JsonUsageTap();

    // Silence from the engine between chunks longer than the idle limit ends the stream;
    // time spent waiting for a slow client to read is not the engine's silence.
    let readingClient = false;
    let silent = false;
    // The write that completes the client's answer — a stream's `data: [DONE]`, the last
    // byte of a JSON body of known length — may come before the engine's body ends:
    // what must be recorded before the client has its whole answer goes before it.
    const length = sse ? NaN : Number(upstream.headers['content-length']);
    let relayedBytes = 0;
    let served: Extract<Outcome, { kind: 'served' }> | null = null;
    const completes = (out: Buffer | string): boolean => (sse ? out.includes(DONE_EVENT) : (relayedBytes += out.length) >= length);
    idle = setTimeout(function onIdle(this: NodeJS.Timeout) {
      if (readingClient) return void this.refresh();
      silent = true;
      abort.abort();
    }, f.idleTimeoutMs);
    try {
      let next = first;
      while (!next.done) {
        const out = tap.push(next.value);
        if (served === null && out.length > 0 && f.beforeEnd && completes(out)) {
          served = servedStream(status, tap, ttftMs);
          f.beforeEnd(served);
        }
        if (out.length > 0 && !res.write(out)) {
          readingClient = true;
          await drained(res);
          readingClient = false;
        }
        const stop = sse && f.checkStream ? f.checkStream((tap as SseUsageTap).events) : null;
        if (stop) {
          cutWith = stop;
          abort.abort();
        }
        if (abort.aborted) break;
        idle.refresh();
        next = await chunks.next();
      }
    } catch (err) {
      if (served === null && (!abort.aborted || timedOut)) return brokenBy(new LlmgwError('LLMGW_UPSTREAM_FAILED', `endpoint ${lease.id} failed mid-response: ${describe(err)}`));
    }
    if (served !== null) {
      // The client has its whole answer (and its record was written): whatever the
      // engine's body did after that, the request was served.
      if (!res.writableEnded && !res.destroyed) res.end(tap.end());
      lease.succeeded();
      return served;
    }
    if (silent) return brokenBy(new LlmgwError('LLMGW_UPSTREAM_TIMEOUT', `endpoint ${lease.id} sent nothing for ${f.idleTimeoutMs} ms mid-response (router.idle_timeout_ms)`));
    if (cutWith) {
      lease.abandoned();
      endBroken(res, sse, tap, cutWith);
      return { kind: 'broken', error: cutWith, ttftMs, relayed: relayedOf(tap) };
    }
    if (abort.aborted) {
      lease.abandoned();
      return { kind: 'gone', ttftMs, relayed: relayedOf(tap) };
    }
    // The tail may hold the usage chunk: the outcome is known only once it is parsed.
    const tail = tap.end();
    served = servedStream(status, tap, ttftMs);
    f.beforeEnd?.(served);
    res.end(tail);
    lease.succeeded();
    return served;
  } catch (err) {
    // A bug here must not leave a half-open breaker's trial out for good.
    lease.abandoned();
    throw err;
  } finally {
    clearTimeout(firstToken);
    clearTimeout(idle);
    f.cut.now = null;
    lease.release(Date.now());
    stopWatching();
  }
}

/** Ends a response that cannot be finished: an SSE stream with an error event and [DONE]; a JSON body by a reset. */
function endBroken(res: ServerResponse, sse: boolean, tap: UsageTap, error: LlmgwError): void {
  if (sse && !res.writableEnded && !res.destroyed) res.end(`${tap.end()}data: ${JSON.stringify(error.toOpenAI())}\n\ndata: [DONE]\n\n`);
  else res.destroy(); // a JSON body cut short cannot be repaired; a reset says so
}

/** A relayed answer that reached its client whole; a stream's events, less its `[DONE]`, stand in for a usage it lacks. */
function servedStream(status: number, tap: UsageTap, ttftMs: number): Extract<Outcome, { kind: 'served' }> {
  const served = { kind: 'served', status, usage: tap.usage, ttftMs, error: null } as const;
  return tap instanceof SseUsageTap ? { ...served, generated: { events: Math.max(0, tap.events - 1), usage: tap.usage } } : served;
}

function relayedOf(tap: UsageTap): Relayed | null {
  return tap instanceof SseUsageTap ? { events: tap.events, usage: tap.usage } : null;
}

/**
 * A connection that dropped after the request went out (the engine died or reset it
 * while holding the request) may be the request's doing; a refused connection or a
 * connect timeout was the endpoint's state before the request reached it.
 */
function droppedAfterSend(err: unknown): string | null {
  const e = err as { code?: string; cause?: { code?: string } };
  const code = e.code ?? e.cause?.code ?? '';
  if (code === 'ECONNREFUSED' || code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'ENOTFOUND' || code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return null;
  return 'connection dropped';
}

/** An engine's (error) body as text, up to ERROR_BODY_MAX bytes; the rest is discarded. */
async function readText(body: AsyncIterable<Buffer> & { destroy?: () => void }): Promise<string> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    if (size < ERROR_BODY_MAX) parts.push(chunk);
    size += chunk.length;
  }
  return Buffer.concat(parts).subarray(0, ERROR_BODY_MAX).toString('utf8');
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
