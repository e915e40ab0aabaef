// The HTTP load driver: one undici pool per target, one Sample per request, and the two
// ways of offering load — a closed loop (C requests always in flight: measures capacity
// and latency at a concurrency) and an open loop (jobs start on a fixed schedule whatever
// the answers: measures latency at an offered load, where queueing shows up honestly
// instead of slowing the offered load down, as a closed loop would).

import { Pool } from 'undici';

export interface Sample {
  /** ms since the load started (performance.now() based). */
  startMs: number;
  /** HTTP status; 0 when no response came (connect error, reset). */
  status: number;
  /** Time to the first body chunk: for SSE, the first `data:` event. */
  ttftMs: number;
  /** Time to the last byte of the body. */
  totalMs: number;
  error: string | undefined;
  /** The endpoint llmgw says served it (`x-llmgw-endpoint`); undefined from other targets. */
  servedBy?: string;
}

export interface Reply {
  sample: Sample;
  /** The body, when the caller asked to keep it. */
  body: string | undefined;
}

export interface SendOptions {
  /** Keep the body (to read an answer); off, it is dropped as it arrives, to spare the client CPU. */
  keepBody?: boolean;
  /** Extra request headers (x-llmgw-priority …). */
  headers?: Record<string, string>;
}

/** A client for one target URL: keep-alive connections, no pipelining, like a real SDK. */
export class LoadClient {
  private readonly pool: Pool;
  /** Samples' startMs count from here. */
  private readonly origin = performance.now();

  /** `stuckMs`: a stuck request fails after this long instead of hanging the run it belongs to. */
  constructor(url: string, connections: number, stuckMs = 30_000) {
    this.pool = new Pool(url, { connections, pipelining: 1, keepAliveTimeout: 30_000, headersTimeout: stuckMs, bodyTimeout: stuckMs });
  }

  /** POSTs `body` (JSON text) to `path`; never throws: failures are Samples with `error`. */
  async post(path: string, body: string, opts: SendOptions = {}): Promise<Reply> {
    const t0 = performance.now();
    const sample: Sample = { startMs: t0 - this.origin, status: 0, ttftMs: NaN, totalMs: NaN, error: undefined };
    let text: string | undefined;
    try {
      const res = await this.pool.request({ path, method: 'POST', headers: { 'content-type': 'application/json', ...opts.headers }, body });
      sample.status = res.statusCode;
      const servedBy = res.headers['x-llmgw-endpoint'];
      if (typeof servedBy === 'string') sample.servedBy = servedBy;
      const chunks: Buffer[] = [];
      await new Promise<void>((resolve, reject) => {
        res.body.on('data', (c: Buffer) => {
          if (Number.isNaN(sample.ttftMs)) sample.ttftMs = performance.now() - t0;
          if (opts.keepBody) chunks.push(c);
        });
        res.body.once('end', resolve);
        res.body.once('error', reject);
      });
      sample.totalMs = performance.now() - t0;
      if (opts.keepBody || res.statusCode >= 400) text = Buffer.concat(chunks).toString('utf8');
      if (res.statusCode >= 400) sample.error = `HTTP ${res.statusCode}`;
    } catch (err) {
      sample.totalMs = performance.now() - t0;
      sample.error = (err as { code?: string }).code ?? (err as Error).message;
    }
    return { sample, body: text };
  }

  async close(): Promise<void> {
    await this.pool.close();
  }
}

export interface ClosedLoop {
  concurrency: number;
  /** Stop starting jobs after this long… */
  durationMs?: number;
  /** …or after this many jobs, whichever comes first. */
  jobs?: number;
}

/**
 * Runs `job(i)` from `concurrency` workers, each starting its next job when the last one
 * ends, until the duration or the job count is used up. Returns the wall time (ms).
 */
export async function closedLoop(o: ClosedLoop, job: (i: number) => Promise<void>): Promise<number> {
  if (o.durationMs === undefined && o.jobs === undefined) throw new Error('closedLoop needs durationMs or jobs');
  const t0 = performance.now();
  const deadline = t0 + (o.durationMs ?? Infinity);
  const limit = o.jobs ?? Infinity;
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < limit && performance.now() < deadline) await job(next++);
  };
  await Promise.all(Array.from({ length: o.concurrency }, worker));
  return performance.now() - t0;
}

export interface OpenLoopResult {
  wallMs: number;
  /** How late the latest job started against its schedule (ms): large means the client itself was saturated. */
  maxLagMs: number;
}

/**
 * Starts `job(i)` at `scheduleMs[i]` after now (sorted ascending) without waiting for
 * earlier jobs, then waits for all of them.
 */
export async function openLoop(scheduleMs: readonly number[], job: (i: number) => Promise<void>): Promise<OpenLoopResult> {
  const t0 = performance.now();
  const running: Promise<void>[] = [];
  let maxLagMs = 0;
  for (let i = 0; i < scheduleMs.length; i++) {
    const wait = t0 + scheduleMs[i]! - performance.now();
    // setTimeout is ~1 ms granular: jobs due within the next ms start now, together.
    if (wait >= 1) await new Promise((r) => setTimeout(r, wait));
    maxLagMs = Math.max(maxLagMs, performance.now() - (t0 + scheduleMs[i]!));
    running.push(job(i));
  }
  await Promise.all(running);
  return { wallMs: performance.now() - t0, maxLagMs };
}
