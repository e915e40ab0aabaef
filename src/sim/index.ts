// The simulated vLLM/SGLang engine: `startSimEngine` puts an engine, its metrics and its
// HTTP server together on one port. It touches no process-wide state (no signal handlers,
// no global metrics registry), so the server role can run many of them in one process or
// inside worker threads.

import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { LlmgwError } from '../errors.js';
import { urlFor } from '../net/host-port.js';
import type { EngineClock } from './clock.js';
import type { GaugeTiming, SchedulingPolicy, StepModel } from './engine.js';
import { SimEngine } from './engine.js';
import { createSimHttpServer, type FragileOptions } from './http-server.js';
import type { SimFlavor } from './metrics.js';
import { SimMetrics } from './metrics.js';

export interface SimEngineOptions {
  host: string;
  /** 0 = ephemeral */
  port: number;
  /** Served model name. */
  model: string;
  /** Which metric names /metrics exposes (and `owned_by` in /v1/models). */
  flavor: SimFlavor;
  /** Time factor: 10 => every simulated duration divided by 10. */
  speed: number;
  /** Same seed + same request => same output. */
  seed: number;
  /** Default 256. */
  maxNumSeqs?: number | undefined;
  /** KV blocks of 16 tokens; default 29205 (Llama-3.1-8B on an H100). */
  numGpuBlocks?: number | undefined;
  /** Default 32768, or what the KV cache holds if that is less. */
  maxModelLen?: number | undefined;
  /** Per-step token budget; default 8192; 0 = none (no chunked prefill). */
  maxNumBatchedTokens?: number | undefined;
  /** What the gauges read: the last step's scheduler stats (default, as vLLM) or the live queues. */
  gauges?: GaugeTiming | undefined;
  /** > 0: the gauges change only every this many ms, as SGLang's do. Default 0. */
  gaugeLagMs?: number | undefined;
  /** vLLM's --scheduling-policy; default fcfs. */
  schedulingPolicy?: SchedulingPolicy | undefined;
  /** With the sglang flavor: serve its settings at `/server_info` as SGLang does (default), or not, as older releases. */
  serverInfo?: boolean | undefined;
  /** Step-time coefficients (µs); default Llama-3.1-8B on one H100. */
  stepModel?: StepModel | undefined;
  /** Request bodies over this many bytes get a 413; default 32 MiB. */
  bodyLimitBytes?: number | undefined;
  /** Crash on bad input instead of refusing it (`llmgw run --role=sim --fragile`); never in-process. */
  fragile?: FragileOptions | undefined;
  /** For specs: drive the engine on a ManualClock. */
  clock?: EngineClock | undefined;
}

export interface RunningSim {
  url: string;
  port: number;
  engine: SimEngine;
  close(): Promise<void>;
}

export async function startSimEngine(o: SimEngineOptions): Promise<RunningSim> {
  if (typeof o.model !== 'string' || o.model.trim() === '') throw invalid('model must be a non-empty string');
  if (o.flavor !== 'vllm' && o.flavor !== 'sglang') throw invalid(`flavor must be vllm or sglang, not '${String(o.flavor)}'`);
  if (!Number.isSafeInteger(o.seed)) throw invalid(`seed must be an integer, not ${o.seed}`);
  let engine: SimEngine;
  try {
    engine = new SimEngine({
      maxNumSeqs: o.maxNumSeqs,
      numGpuBlocks: o.numGpuBlocks,
      maxModelLen: o.maxModelLen,
      maxNumBatchedTokens: o.maxNumBatchedTokens,
      gauges: o.gauges,
      gaugeLagMs: o.gaugeLagMs,
      schedulingPolicy: o.schedulingPolicy,
      speed: o.speed,
      stepModel: o.stepModel,
      clock: o.clock,
    });
  } catch (err) {
    throw invalid((err as Error).message);
  }
  const metrics = new SimMetrics(engine, { model: o.model, flavor: o.flavor });
  const server = createSimHttpServer({ engine, metrics, model: o.model, flavor: o.flavor, seed: o.seed, bodyLimitBytes: o.bodyLimitBytes, fragile: o.fragile, serverInfo: o.serverInfo ?? true });
  try {
    await listen(server, o.host, o.port);
  } catch (err) {
    engine.close();
    metrics.close();
    throw err;
  }
  const port = (server.address() as AddressInfo).port;
  let closing: Promise<void> | undefined;
  return {
    url: urlFor(o.host, port),
    port,
    engine,
    close() {
      closing ??= (async () => {
        // Aborting first lets in-flight responses end cleanly (an SSE error event, a 503)
        // before the sockets go.
        engine.close();
        metrics.close();
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
          setImmediate(() => server.closeAllConnections());
        });
      })();
      return closing;
    },
  };
}

function listen(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error): void => reject(err);
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
}

function invalid(message: string): LlmgwError {
  return new LlmgwError('LLMGW_INVALID_REQUEST', `sim: ${message}`);
}

export { ManualClock, realClock } from './clock.js';
export type { EngineClock } from './clock.js';
export { ENGINE_DEFAULTS, LLAMA_3_1_8B_H100, Sequence, SimEngine } from './engine.js';
export type { EngineCounters, EngineObserver, FinishReason, GaugeTiming, SimEngineConfig, StepInfo, StepModel, SubmitRequest } from './engine.js';
export { BLOCK_SIZE, KvCache, hashBlock } from './kv-cache.js';
export type { SimFlavor } from './metrics.js';
export { SimMetrics } from './metrics.js';
export { applyChatTemplate, tokenize } from './tokenizer.js';
export type { ChatMessage } from './tokenizer.js';
export { planOutput } from './text.js';
