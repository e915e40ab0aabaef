// The simulated engine's /metrics, with the real engines' names, labels and buckets
// (vLLM's and SGLang's documented names), because the router reads them exactly as it would
// read a real fleet's. One prom-client Registry per engine: several engines may live in
// one process (or one worker thread) and must not share the global registry.
//
// Gauges read the engine's report at scrape time (prom-client `collect`): the scheduler
// stats of its last step by default, as vLLM's are, or what `gauges`/`gaugeLagMs` make it
// (engine.ts); counters and histograms are fed by engine events as they happen.
// Times are observed on the engine's clock, in wall seconds: at `--speed 10` a step that
// would take 10 ms on a GPU is observed as 1 ms, which is what clients of the sim see too.

import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { EngineObserver, FinishReason, Sequence, SimEngine } from './engine.js';
import { BLOCK_SIZE } from './kv-cache.js';

export type SimFlavor = 'vllm' | 'sglang';

export interface SimMetricsOptions {
  model: string;
  flavor: SimFlavor;
}

// vllm/v1/metrics/loggers.py
const VLLM_TTFT_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0];
const VLLM_ITL_BUCKETS = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0];
// Fixed in vLLM v1 (older releases used the CUDA-graph capture sizes).
const VLLM_ITERATION_TOKEN_BUCKETS = [1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384];
const VLLM_REQUEST_LATENCY_BUCKETS = [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0];
// sglang/srt/metrics/collector.py (TokenizerMetricsCollector defaults)
const SGLANG_TTFT_BUCKETS = [0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400];
const SGLANG_ITL_BUCKETS = [0.002, 0.004, 0.006, 0.008, 0.01, 0.015, 0.02, 0.025, 0.03, 0.035, 0.04, 0.06, 0.08, 0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8];
const SGLANG_E2E_BUCKETS = [0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400, 600, 1200, 1800, 2400];

/** The finish reasons vLLM pre-creates a request_success series for. */
const FINISH_REASONS: readonly FinishReason[] = ['stop', 'length', 'abort'];

export class SimMetrics {
  readonly registry = new Registry();
  private readonly detach: () => void;

  constructor(engine: SimEngine, opts: SimMetricsOptions) {
    this.registry.setContentType(Registry.PROMETHEUS_CONTENT_TYPE);
    const observer = opts.flavor === 'sglang' ? sglangMetrics(this.registry, engine, opts.model) : vllmMetrics(this.registry, engine, opts.model);
    this.detach = engine.addObserver(observer);
  }

  /** `text/plain; version=0.0.4; charset=utf-8` */
  get contentType(): string {
    return this.registry.contentType;
  }

  render(): Promise<string> {
    return this.registry.metrics();
  }

  close(): void {
    this.detach();
  }
}

function vllmMetrics(registry: Registry, engine: SimEngine, model: string): EngineObserver {
  const registers = [registry];
  // vLLM prints labels alphabetically; prom-client prints them in the order given here.
  const labelNames = ['engine', 'model_name'] as const;
  const labels = { engine: '0', model_name: model };

  new Gauge({
    name: 'vllm:num_requests_running',
    help: 'Number of requests in model execution batches.',
    labelNames,
    registers,
    collect() {
      this.set(labels, engine.reported.running);
    },
  });
  new Gauge({
    name: 'vllm:num_requests_waiting',
    help: 'Number of requests waiting to be processed.',
    labelNames,
    registers,
    collect() {
      this.set(labels, engine.reported.waiting);
    },
  });
  new Gauge({
    name: 'vllm:kv_cache_usage_perc',
    help: 'KV-cache usage. 1 means 100 percent usage.',
    labelNames,
    registers,
    collect() {
      this.set(labels, engine.reported.kvUsage);
    },
  });
  const counter = (name: string, help: string): Counter<'engine' | 'model_name'> => {
    const c = new Counter({ name, help, labelNames, registers });
    c.inc(labels, 0); // present from the first scrape, as in vLLM
    return c;
  };
  const prefixQueries = counter('vllm:prefix_cache_queries_total', 'Prefix cache queries, in terms of number of queried tokens.');
  const prefixHits = counter('vllm:prefix_cache_hits_total', 'Prefix cache hits, in terms of number of cached tokens.');
  const preemptions = counter('vllm:num_preemptions_total', 'Cumulative number of preemption from the engine.');
  const promptTokens = counter('vllm:prompt_tokens_total', 'Number of prefill tokens processed.');
  const generationTokens = counter('vllm:generation_tokens_total', 'Number of generation tokens processed.');
  const success = new Counter({
    name: 'vllm:request_success_total',
    help: 'Count of successfully processed requests.',
    labelNames: ['engine', 'finished_reason', 'model_name'] as const,
    registers,
  });
  for (const r of FINISH_REASONS) success.inc({ engine: '0', finished_reason: r, model_name: model }, 0);

  const histogram = (name: string, help: string, buckets: number[]): Histogram<'engine' | 'model_name'> => {
    const h = new Histogram({ name, help, buckets, labelNames, registers });
    h.zero(labels); // vLLM creates each series up front, so it is scraped at 0 before any request
    return h;
  };
  const ttft = histogram('vllm:time_to_first_token_seconds', 'Histogram of time to first token in seconds.', VLLM_TTFT_BUCKETS);
  const itl = histogram('vllm:inter_token_latency_seconds', 'Histogram of inter-token latency in seconds.', VLLM_ITL_BUCKETS);
  const e2e = histogram('vllm:e2e_request_latency_seconds', 'Histogram of e2e request latency in seconds.', VLLM_REQUEST_LATENCY_BUCKETS);
  const queue = histogram('vllm:request_queue_time_seconds', 'Histogram of time spent in WAITING phase for request.', VLLM_REQUEST_LATENCY_BUCKETS);
  const inference = histogram('vllm:request_inference_time_seconds', 'Histogram of time spent in RUNNING phase for request.', VLLM_REQUEST_LATENCY_BUCKETS);
  const prefillTime = histogram('vllm:request_prefill_time_seconds', 'Histogram of time spent in PREFILL phase for request.', VLLM_REQUEST_LATENCY_BUCKETS);
  const decodeTime = histogram('vllm:request_decode_time_seconds', 'Histogram of time spent in DECODE phase for request.', VLLM_REQUEST_LATENCY_BUCKETS);
  const iterationTokens = histogram('vllm:iteration_tokens_total', 'Histogram of number of tokens per engine_step.', VLLM_ITERATION_TOKEN_BUCKETS);

  // An info metric emulated as a gauge set to 1; no model_name, as in vLLM.
  const cacheInfo = {
    block_size: String(BLOCK_SIZE),
    cache_dtype: 'auto',
    enable_prefix_caching: engine.kv.enablePrefixCaching ? 'True' : 'False',
    engine: '0',
    gpu_memory_utilization: '0.9',
    num_cpu_blocks: 'None',
    num_gpu_blocks: String(engine.kv.numBlocks),
  };
  new Gauge({ name: 'vllm:cache_config_info', help: 'Information of the LLMEngine CacheConfig', labelNames: Object.keys(cacheInfo), registers }).set(cacheInfo, 1);

  return {
    onScheduled(_seq, queried, hit) {
      prefixQueries.inc(labels, queried);
      prefixHits.inc(labels, hit);
    },
    onPreempted() {
      preemptions.inc(labels);
    },
    onStepEnd(step) {
      iterationTokens.observe(labels, step.prefillTokens + step.decodeTokens);
    },
    onToken(seq, atMs, first, sinceLastMs) {
      generationTokens.inc(labels);
      if (first) {
        promptTokens.inc(labels, seq.numPromptTokens);
        ttft.observe(labels, seconds(atMs - seq.arrivalMs));
      } else {
        itl.observe(labels, seconds(sinceLastMs));
      }
    },
    onFinished(seq, reason, atMs) {
      success.inc({ engine: '0', finished_reason: reason, model_name: model });
      const t = phases(seq, atMs);
      e2e.observe(labels, t.e2e);
      queue.observe(labels, t.queue);
      inference.observe(labels, t.inference);
      prefillTime.observe(labels, t.prefill);
      decodeTime.observe(labels, t.decode);
    },
  };
}

function sglangMetrics(registry: Registry, engine: SimEngine, model: string): EngineObserver {
  const registers = [registry];
  const labelNames = ['engine_type', 'model_name', 'tp_rank'] as const;
  const labels = { engine_type: 'unified', model_name: model, tp_rank: '0' };
  const throughput = new RateWindow(engine);

  const gauge = (name: string, help: string, read: () => number): void => {
    new Gauge({
      name,
      help,
      labelNames,
      registers,
      collect() {
        this.set(labels, read());
      },
    });
  };
  gauge('sglang:num_running_reqs', 'The number of running requests.', () => engine.reported.running);
  gauge('sglang:num_queue_reqs', 'The number of requests in the waiting queue.', () => engine.reported.waiting);
  gauge('sglang:num_used_tokens', 'The number of used tokens.', () => engine.kv.numUsedBlocks * BLOCK_SIZE);
  gauge('sglang:token_usage', 'The token usage.', () => engine.reported.kvUsage);
  gauge('sglang:gen_throughput', 'The generation throughput (token/s).', () => throughput.rate());
  gauge('sglang:cache_hit_rate', 'The prefix cache hit rate.', () => {
    const c = engine.counters;
    return c.prefixQueriedTokens === 0 ? 0 : c.prefixHitTokens / c.prefixQueriedTokens;
  });
  gauge('sglang:max_total_num_tokens', 'Maximum total number of tokens in the KV cache pool.', () => engine.kv.numBlocks * BLOCK_SIZE);

  const counter = (name: string, help: string): Counter<'engine_type' | 'model_name' | 'tp_rank'> => {
    const c = new Counter({ name, help, labelNames, registers });
    c.inc(labels, 0);
    return c;
  };
  const promptTokens = counter('sglang:prompt_tokens_total', 'Number of prefill tokens processed.');
  const generationTokens = counter('sglang:generation_tokens_total', 'Number of generation tokens processed.');
  const cachedTokens = counter('sglang:cached_tokens_total', 'Number of cached prompt tokens.');
  const requests = counter('sglang:num_requests_total', 'Number of requests processed.');
  const aborted = counter('sglang:num_aborted_requests_total', 'Number of requests aborted.');

  const histogram = (name: string, help: string, buckets: number[]): Histogram<'engine_type' | 'model_name' | 'tp_rank'> => {
    const h = new Histogram({ name, help, buckets, labelNames, registers });
    h.zero(labels);
    return h;
  };
  const ttft = histogram('sglang:time_to_first_token_seconds', 'Histogram of time to first token in seconds.', SGLANG_TTFT_BUCKETS);
  const itl = histogram('sglang:inter_token_latency_seconds', 'Histogram of inter-token latency in seconds.', SGLANG_ITL_BUCKETS);
  const e2e = histogram('sglang:e2e_request_latency_seconds', 'Histogram of End-to-end request latency in seconds', SGLANG_E2E_BUCKETS);

  return {
    onToken(seq, atMs, first, sinceLastMs) {
      generationTokens.inc(labels);
      throughput.add(atMs);
      if (first) {
        promptTokens.inc(labels, seq.numPromptTokens);
        ttft.observe(labels, seconds(atMs - seq.arrivalMs));
      } else {
        itl.observe(labels, seconds(sinceLastMs));
      }
    },
    onFinished(seq, reason, atMs) {
      requests.inc(labels);
      if (reason === 'abort') aborted.inc(labels);
      if (seq.numCachedTokens > 0) cachedTokens.inc(labels, seq.numCachedTokens);
      e2e.observe(labels, seconds(atMs - seq.arrivalMs));
    },
  };
}

/** Durations of a finished request's phases, in seconds (vLLM's FinishedRequestStats). */
function phases(seq: Sequence, atMs: number): { e2e: number; queue: number; inference: number; prefill: number; decode: number } {
  const scheduled = seq.firstScheduledMs >= 0 ? seq.firstScheduledMs : atMs;
  const firstToken = seq.firstTokenMs >= 0 ? seq.firstTokenMs : atMs;
  return {
    e2e: seconds(atMs - seq.arrivalMs),
    queue: seconds(scheduled - seq.arrivalMs),
    inference: seconds(atMs - scheduled),
    prefill: seconds(firstToken - scheduled),
    decode: seconds(atMs - firstToken),
  };
}

function seconds(ms: number): number {
  return Math.max(0, ms) / 1000;
}

/**
 * Tokens per second over the last second, for sglang:gen_throughput (SGLang reports it
 * per logging interval). Counts per 100 ms slot in a ring, so memory stays constant.
 */
class RateWindow {
  private static readonly SLOT_MS = 100;
  private static readonly SLOTS = 10;
  private readonly counts = new Float64Array(RateWindow.SLOTS);
  private readonly slotIds = new Float64Array(RateWindow.SLOTS).fill(-1);

  constructor(private readonly engine: SimEngine) {}

  add(atMs: number): void {
    const id = Math.floor(atMs / RateWindow.SLOT_MS);
    const i = id % RateWindow.SLOTS;
    if (this.slotIds[i] !== id) {
      this.slotIds[i] = id;
      this.counts[i] = 0;
    }
    this.counts[i]!++;
  }

  rate(): number {
    const nowId = Math.floor(this.engine.now() / RateWindow.SLOT_MS);
    let total = 0;
    for (let i = 0; i < RateWindow.SLOTS; i++) {
      const id = this.slotIds[i]!;
      if (id > nowId - RateWindow.SLOTS && id <= nowId) total += this.counts[i]!;
    }
    return total / ((RateWindow.SLOTS * RateWindow.SLOT_MS) / 1000);
  }
}
