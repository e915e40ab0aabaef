// Scheduling-quality suite: the same multi-turn chat load with shared system prompts,
// offered to 4 simulated engines through (a) a round-robin proxy, (b) a least-in-flight
// proxy, (c) a consistent hash on the tenant header (an oracle: it is told each request's
// application, llmgw must infer it from the prompt), (d) llmgw as configured; under
// several tenant-popularity laws, from uniform to one tenant that alone exceeds an
// engine. Each policy gets fresh engines (cold caches) and exactly
// the same requests at the same times: same workload seed, same arrival schedule, and all
// engines share one --seed, so an engine's answer depends only on the prompt — whichever
// engine serves a turn, the next turn's history is the same bytes.
//
// What decides the result is the engines' prefix caches: a turn whose system prompt and
// history are cached skips most of its prefill. Each engine's KV pool holds only part of
// the fleet's working set, so a policy that scatters a conversation across engines pays
// for it in evictions, recomputed prefills, queueing and TTFT.
//
// Measured, the whole suite once (2 shared cores, load average 0.1 before), llmgw
// against the tenant hash on three rings (in brackets the applications each ring puts
// on each engine), p90 ms:
//
//   workload   llmgw   ring 0           ring 1           ring 2           budget (median ring)
//   uniform    51.7    49.3 (6/4/5/5)   50.3 (6/6/3/5)   147 (7/3/5/5)    ✓ (goodput 4.5× round-robin's)
//   zipf-0.8   30.7    30.0 (6/4/5/4)   30.9 (6/6/2/5)   30.5 (7/3/4/5)   ✗ by 0.2 ms
//   zipf-1.2   29.5    28.9 (6/3/5/5)   31.9 (5/6/3/5)   37.7 (7/2/5/5)   ✓
//   zipf-1.6   31.7    29.3 (5/4/5/5)   30.6 (6/5/3/5)   38.2 (7/3/5/4)   ✗ by 1.1 ms
//   hot-60     48.7    2848             3499             3761             ✓ (72× better)
//
// Rerun once on the build whose sim counts as waiting only what a step left, with 4096
// connections to an engine (load average 1.9 before), p90 ms, llmgw against the median
// ring: uniform 55.1 / 52.6, zipf-0.8 33.4 / 31.6 (✗ by 1.8 ms), zipf-1.2 33.2 / 34.2,
// zipf-1.6 35.6 / 36.0, hot-60 52.9 / 3485 (66× better); goodput on uniform 4.3×
// round-robin's. The Zipf loads moved within the noise described below.
//
// The two misses are within what one policy moves between runs: rerun alone in the same
// session (ring 0 and llmgw only, twice each), llmgw's p90 was 29.3 / 29.5 on zipf-0.8
// and 29.6 / 29.3 on zipf-1.6, ring 0's 28.9 / 29.8 and 29.4 / 30.5; the round before,
// every Zipf load passed (30.0, 31.4, 31.0 against medians of 31.4, 32.8, 33.1). Bounding
// batch slots by the KV cache (this round) did not move them: the build before it gave
// 30.0 / 29.7 and 29.4 / 29.8 in the same interleaved runs.
//
// Ring 0, the only ring the suite ran before, is the luckiest of the three on every load:
// on zipf-1.2, over 500 rings the most applications on one engine were 5 in 4% of them,
// 6 (ring 0) in 29%, 7 in 34% and 8–12 in 33%. Judged against it alone, llmgw missed on
// the Zipf loads by 1–5 ms in earlier runs. In the round before its engines' mean TTFT was 0.1–1.5 ms
// above ring 0's, its path within 0.9 ms either way, its CPU per request 0.1–1.2 ms more.
//
// llmgw places an application no engine holds by load alone, and in one zipf-1.6 run put
// 11 of 19 on the engine without the hot one, past what its cache held. Two placements
// were tried against that and measured no better, three runs each:
// - by the engines' cache footprint in the prefix index: conversations' dead histories
//   counted, the engines of small applications took more, and zipf-1.6's p90 was
//   30.2–32.7 against 29.9–31.1;
// - by how many applications each engine served, fewest first: the split evened out
//   (5/5/7/5) but zipf-1.2's p90 was 30.3–33.3 against 30.8–31.7.
// So once no engine holds far more than its share (ring 2's 7, or 9 beside the hot tenant),
// placement did not move the p90. What sets it there was not isolated; the likeliest part
// is warm turns sharing a step with another turn's cold prefill.
//
// Tried against that and dropped, one interleaved round per Zipf load (ring 0 and llmgw):
// a prefix score net of the prefill each engine was sent and had not begun answering (the
// cost a KV-aware router such as Dynamo's minimises), so that a turn leaves its history
// for an engine holding only its system prompt while the first has a cold prompt to
// prefill. It moved 2–39 conversations a run, the hit rate fell 0.3–1.5 points, and the
// engines' mean TTFT rose 0.3–0.5 ms on every load (22.5 / 22.2, 23.2 / 22.7, 22.1 / 21.8
// against the build before); p90 37.3 / 39.9, 41.2 / 36.0, 39.4 / 35.2. In the build
// before's runs the engines' mean TTFT was the hash's within 0.8 ms either way, while
// llmgw's path (client TTFT less engine TTFT) was 0.2–2.1 ms longer and its CPU per
// request 0.9–1.7 ms more than the bare proxy's: at equal hit rates what is left is the
// gateway's own work on 2 shared cores, and ring 0 itself read 34.0 and 39.2 ms p90 on
// zipf-0.8 in two runs.
//
// The Zipf loads three times over (BENCH_QUALITY_REPEAT=3, three rings, load average 1.3
// before), medians (min–max), p90 ms, llmgw against each pass's median ring: zipf-0.8
// 38.4 (37.2–42.7) against 35.9 (34.7–36.2), zipf-1.2 37.3 (37.0–38.9) against 39.0
// (37.3–45.5), zipf-1.6 38.6 (38.0–39.1) against 36.7 (36.6–37.4): a miss of 2–2.5 ms on
// two loads that holds over the repeats, a pass on one. The engines' mean TTFT under
// llmgw was 21.7–22.8 ms, the median rings' 22.0–25.7; llmgw's path 6.3–8.0 ms against
// 5.2–8.5, its CPU per request 5.9–6.7 ms against 4.2–5.9. A CPU profile of one zipf-1.2
// run (1,261 requests): llmgw's main thread busy 4.35 s against the proxy's 2.90 s, writev
// about equal (1.22 / 1.32 s), the rest spread thin — GC 200 ms against 83, stream
// plumbing 200 against 106, startup ~0.4 s, attempt, usage tap, admission and postMessage
// 50–85 ms each — and its worker thread 0.84 s more. What is left against the hash is the
// gateway's CPU per request, not where it sends the turns.
//
// Checked by breaking the baseline on purpose (BENCH_QUALITY_BURN_US=1500: ring 0
// spinning 1.5 ms of CPU per request, about llmgw's extra), three passes of zipf-0.8 and
// zipf-1.6, p90 medians (min–max): ring 0 33.7 (33.3–34.0) and 36.1 (35.9–37.3), ring 0
// burning 36.1 (35.8–41.0) and 41.8 (40.7–42.3), llmgw 37.7 (34.7–44.3) and 41.7
// (38.2–44.5); zipf-1.2, ring 0 alone, two passes: 32.1, 36.0 and 35.9. The same
// placement at llmgw's CPU reads llmgw's p90, at the same engine TTFT (21.9–22.7 ms):
// on 2 shared cores ~1.3 ms more CPU a request costs 2.5–6 ms of p90. Per thread, from
// /proc over one zipf-1.2 run after start-up (631 requests, four runs): the proxy's main
// thread 2.3–2.9 s and V8's helper threads ~0.5 s; llmgw's main thread 2.8–3.3 s, its
// worker (pollers, accounting) 0.2–0.3 s, helpers 0.6–0.8 s.
// A CPU profile by sample count (on-CPU time; the wall-clock deltas read before count
// time descheduled too) puts the main thread's extra in many small places — promise
// resumes and microtasks, request validation, prefix hashing, the usage tap, admission,
// postMessage — none over ~10% of it; the socket writes are equal. Relaying each chunk
// through 'data' events instead of the body's async iterator saves ~2 µs a chunk (~60 µs
// a 33-chunk answer, a microbench): not the lever. The refresh scrapes between polls
// were 49 in a run: not one either.
//
// Checked again on zipf-1.2, ring 0 against llmgw, one process each (CPU per request
// after start-up, /proc): the proxy 4.3–5.4 ms (main thread 3.4–4.3), llmgw 5.7–7.7
// (4.3–5.9) over six runs; p90 32.8–36.9 against 35.2–43.7. By the innermost of its own
// frames, llmgw's main thread spends ~0.7 ms a request in its code (validation, hashing,
// admission, scheduling, the usage tap, postMessage) against the proxy's ~0.36 (its body
// parse), the rest in Node's streams and sockets and GC; its worker ~0.45 ms, most of it
// undici under the scrapes. Tried and no different: the front on a core of its own, the
// engines and the client on the other (as a gateway runs apart from its engines), p90
// 38.3 / 38.3 against 40.6 / 34.7; `--max-semi-space-size=32` on llmgw, CPU per request
// 6.9 / 7.0 / 7.0 against 6.7 / 6.6 / 7.1.

import { countFromEnv, fmtNum, fmtRatio, fmtSpread, listFromEnv, median, printTable, type Suite, type TableRow } from './harness.js';
import { playConversation, TENANT_HEADER, tenantOf, type TurnRecord } from './load/chat-client.js';
import { chatWorkload, type ChatWorkload, type ChatWorkloadOptions } from './load/chat-workload.js';
import { ENGINE_TTFT_COUNT, ENGINE_TTFT_SUM, PREEMPTIONS, PREFIX_HITS, PREFIX_QUERIES, scrapeCounters } from './load/engine-metrics.js';
import { LoadClient, openLoop } from './load/http-load.js';
import { extraConfigFromEnv, llmgwConfig, startLlmgw, startSim, type RunningSim } from './load/llmgw.js';
import { assertAlive, cpuMs, launchNode, startedAll, stopAll, type Launched } from './load/processes.js';
import { distribution, type Distribution } from './load/stats.js';
import { createHashRing, positionName } from './baselines/hash-ring.js';
import { tokenize } from '../src/sim/tokenizer.js';

const MODEL = 'bench-chat';
const ENGINES = 4;
/** One seed for every engine: answers depend on the prompt only (see above). */
const ENGINE_SEED = 7;
/**
 * The simulated GPU runs at half an H100's speed. Not faster: the client, the proxy and
 * four engines share 2 cores, and the request rate that brings a round-robin fleet near
 * saturation at full speed would saturate those cores first — the run would then measure
 * Node, not scheduling. At this speed and load round-robin is near saturation (its TTFT
 * is several times its unloaded value, its throughput still matches the offered load):
 * where routing decides TTFT. At 0.6 the policies barely differ; at 0.45 round-robin
 * falls behind the arrivals.
 */
const SPEED = 0.5;
/**
 * KV blocks (16 tokens) per engine: 16k tokens. The 20 system prompts alone are ~33k
 * tokens, so no engine can keep every application's prefix, let alone every history:
 * whether a turn finds its prefix depends on where the router sent the earlier ones.
 */
const NUM_GPU_BLOCKS = 1_024;

const BASE_WORKLOAD: Omit<ChatWorkloadOptions, 'popularity'> = {
  seed: 42,
  // ~1.3–2k tokens each.
  systemPrompts: 20,
  systemWords: [1_200, 1_800],
  // 12 s of arrivals, ~630 requests (~45/s) per policy and workload: 30 runs of ~20 s,
  // the suite ~9.5 minutes (the hash's overloaded engine drains for longest).
  conversations: 144,
  turns: [3, 6],
  userWords: [20, 60],
  // Short answers: every token is an SSE chunk through the client, the proxy and an
  // engine, all on the same 2 cores.
  answerTokens: [16, 48],
  thinkMs: 300,
  arrivalsPerSecond: 12,
};

/** What llmgw must achieve on a workload, against the tenant hash and round-robin (DESIGN.md's budget). */
type Budget = 'uniform' | 'skewed' | 'overload';

interface WorkloadCase {
  /** Also the name BENCH_QUALITY_WORKLOADS selects it by. */
  name: string;
  what: string;
  popularity: number;
  hotShare?: number;
  /** The fleet, where this workload needs another than SPEED and the sim's batch limit. */
  speed?: number;
  maxNumSeqs?: number;
  budget: Budget;
}

/**
 * Tenant popularity from flat to one tenant beyond an engine. Zipf over 20 tenants gives
 * the first 21% of conversations at s = 0.8, 35% at 1.2 and 50% at 1.6.
 *
 * - uniform runs slower engines (speed 0.3): round-robin is then past saturation, where a
 *   throughput ratio means capacity. At 0.5 it keeps up, and every policy's throughput
 *   is the offered load.
 * - hot-60 gives one tenant 68% of conversations (60% + its Zipf share of the rest) on
 *   engines that batch at most 8 sequences. At the sim's default of 256 a batch is nearly
 *   free (a step costs β0 plus µs per token), and one engine with a warm cache carried
 *   84% of this load at a p90 TTFT under 50 ms: no tenant the 2 cores can drive exceeds
 *   it. With 8, the hot tenant needs ~14 running sequences, nearly twice what an engine
 *   holds, while the fleet has room for three times the load.
 */
const WORKLOADS: WorkloadCase[] = [
  { name: 'uniform', what: 'every tenant equally popular, engines at speed 0.3', popularity: 0, speed: 0.3, budget: 'uniform' },
  { name: 'zipf-0.8', what: 'tenant popularity Zipf s = 0.8', popularity: 0.8, budget: 'skewed' },
  { name: 'zipf-1.2', what: 'tenant popularity Zipf s = 1.2', popularity: 1.2, budget: 'skewed' },
  { name: 'zipf-1.6', what: 'tenant popularity Zipf s = 1.6', popularity: 1.6, budget: 'skewed' },
  {
    name: 'hot-60',
    what: 'one tenant 60% of conversations (the rest Zipf s = 0.8), engines batching ≤ 8 sequences: beyond one engine',
    popularity: 0.8,
    hotShare: 0.6,
    maxNumSeqs: 8,
    budget: 'overload',
  },
];

/**
 * Goodput counts answers whose TTFT is within this. About twice an unqueued full prefill
 * of the longest system prompt at speed 0.3 (~2k tokens, ~135 ms): an answer that met no
 * queue makes it whether its prefix was cached or not, one stuck behind a backlog does not.
 */
const GOOD_TTFT_MS = 250;
/** "At the hash's level" on uniform tenants: within the run-to-run noise of p90 (see the notes). */
const UNIFORM_P90_SLACK = 1.2;
/** "Clearly better" where the hash overloads an engine: beyond that noise. */
const OVERLOAD_P90_GAIN = 1.5;
const UNIFORM_GOODPUT_GAIN = 2;

export const suite: Suite = {
  name: 'quality',
  description:
    'multi-turn shared-prefix chat on 4 sim engines, uniform to skewed tenants: round-robin vs least-in-flight vs a tenant hash vs llmgw (TTFT, prefix-cache hit rate, throughput)',
  run,
};

interface Policy {
  name: string;
  /** The tenant hash's ring (`positionName`), for the hash's runs. */
  ring?: number;
  start(engines: readonly RunningSim[]): Promise<{ proc: Launched; url: string }>;
}

const here = (rel: string): string => new URL(rel, import.meta.url).pathname;

const proxyPolicy =
  (policy: 'round-robin' | 'least-inflight' | 'tenant-hash', ring = 0, burnUs = 0) =>
  async (engines: readonly RunningSim[]): Promise<{ proc: Launched; url: string }> => {
    const args = ['--policy', policy, '--tenant-header', TENANT_HEADER, '--ring', String(ring), '--burn-us', String(burnUs), ...engines.flatMap((e) => ['--upstream', e.url])];
    const proc = await launchNode(`${policy} proxy`, here('./baselines/proxy.js'), args, /listening on (\S+)$/);
    return { proc, url: proc.match[1]! };
  };

const ROUND_ROBIN: Policy = { name: 'round-robin proxy', start: proxyPolicy('round-robin') };
/**
 * The tenant hash runs on several rings: which tenants share an engine is a draw of the
 * ring, and on a skewed load the draw decides. On zipf-1.2, over 500 rings the most
 * applications on one engine were 5 in 4% of rings, 6 in 29%, 7 in 34% and 8–12 in 33%;
 * five rings run once each gave p90 30.4, 31.0, 31.9, 39.2 and 535 ms (the hot tenant
 * sharing an engine with 9 others). Ring 0 is a lucky draw (6/3/5/5). So llmgw is judged
 * against the median ring, not the best one, with every ring printed.
 */
const HASH_RINGS = countFromEnv('BENCH_QUALITY_HASH_RINGS', 3, 'rings of the tenant hash');
/**
 * BENCH_QUALITY_REPEAT=N runs every policy N times on each workload, interleaved pass by
 * pass, and judges llmgw by the medians: on the Zipf loads llmgw and the median ring sit
 * within a few ms of each other, and ring 0 alone read 34.0 and 39.2 ms p90 on zipf-0.8
 * in two runs of one build, so one run's verdict there is a coin.
 */
const REPEAT = countFromEnv('BENCH_QUALITY_REPEAT', 1, 'runs of each policy on each workload');
const TENANT_HASHES: Policy[] = Array.from({ length: HASH_RINGS }, (_, ring) => ({ name: `tenant-hash proxy, ring ${ring}`, ring, start: proxyPolicy('tenant-hash', ring) }));
const LLMGW: Policy = {
  name: 'llmgw',
  start: async (engines) => {
    const extra = extraConfigFromEnv();
    const config = llmgwConfig({ model: MODEL, endpoints: engines.map((e, i) => ({ id: `sim-${i}`, url: e.url })), extra });
    const proc = await startLlmgw(config);
    return { proc, url: proc.url };
  },
};
/**
 * BENCH_QUALITY_BURN_US=N adds a calibration: ring 0 of the tenant hash spinning N µs of
 * CPU on each request before forwarding it (`proxy.ts --burn-us`). Not judged. Set to
 * llmgw's CPU per request less the bare proxy's, it shows whether what separates llmgw
 * from the hash is where the turns go or the gateway's own work on the shared cores.
 */
const BURN_US = countFromEnv('BENCH_QUALITY_BURN_US', 0, 'µs of CPU the calibration row spends per request', 0);
const BURNED: Policy | null = BURN_US > 0 ? { name: `tenant-hash proxy, ring 0, +${BURN_US} µs CPU/req`, ring: 0, start: proxyPolicy('tenant-hash', 0, BURN_US) } : null;
const POLICIES: Policy[] = [ROUND_ROBIN, { name: 'least-in-flight proxy', start: proxyPolicy('least-inflight') }, ...TENANT_HASHES, ...(BURNED ? [BURNED] : []), LLMGW];

interface PolicyResult {
  records: TurnRecord[];
  /** First request sent → last answer done, ms. */
  windowMs: number;
  maxLagMs: number;
  hits: number;
  queries: number;
  preemptions: number;
  /** Mean TTFT as the engines measured it (arrival at the engine → first token), ms. */
  engineTtftMs: number;
  /** CPU the proxy or llmgw used over the run (all its threads), ms; null without /proc. */
  frontCpuMs: number | null;
  /** Of that, its main thread's (`cpuMs`'s 'main'). */
  frontMainCpuMs: number | null;
}

async function run(): Promise<void> {
  const only = listFromEnv('BENCH_QUALITY_WORKLOADS', ',');
  const cases = WORKLOADS.filter((w) => !only || only.includes(w.name));
  if (cases.length === 0) throw new Error(`BENCH_QUALITY_WORKLOADS names none of ${WORKLOADS.map((w) => w.name).join(', ')}`);
  const done: Ran[] = [];
  for (const c of cases) {
    const workload = chatWorkload({ ...BASE_WORKLOAD, popularity: c.popularity, hotShare: c.hotShare });
    const passes: Map<Policy, PolicyResult>[] = [];
    // Pass by pass rather than each policy's runs back to back: a slow stretch of the
    // host then lands on every policy's spread.
    for (let pass = 0; pass < REPEAT; pass++) {
      const results = new Map<Policy, PolicyResult>();
      for (const p of POLICIES) results.set(p, await runPolicy(p, workload, c));
      passes.push(results);
    }
    done.push({ case: c, workload, passes });
  }
  report(done);
}

interface Ran {
  case: WorkloadCase;
  workload: ChatWorkload;
  /** Each pass's results, every policy run once in it. */
  passes: Map<Policy, PolicyResult>[];
}

async function runPolicy(policy: Policy, workload: ChatWorkload, c: WorkloadCase): Promise<PolicyResult> {
  const procs: Launched[] = [];
  try {
    const engines = await startedAll(
      Array.from({ length: ENGINES }, () => startSim({ model: MODEL, speed: c.speed ?? SPEED, seed: ENGINE_SEED, numGpuBlocks: NUM_GPU_BLOCKS, maxNumSeqs: c.maxNumSeqs })),
      procs,
    );
    const front = await policy.start(engines);
    procs.push(front.proc);
    const counters = [PREFIX_HITS, PREFIX_QUERIES, PREEMPTIONS, ENGINE_TTFT_SUM, ENGINE_TTFT_COUNT];
    const before = await Promise.all(engines.map((e) => scrapeCounters(e.url, counters)));
    const cpuBefore = cpuMs(front.proc.pid);
    const mainBefore = cpuMs(front.proc.pid, 'main');

    const client = new LoadClient(front.url, 1_024);
    const records: TurnRecord[] = [];
    let loop;
    try {
      loop = await openLoop(workload.arrivalsMs, (i) => playConversation(client, MODEL, workload, workload.conversations[i]!, (r) => records.push(r)));
    } finally {
      await client.close();
    }
    assertAlive(procs);
    const cpuAfter = cpuMs(front.proc.pid);
    const mainAfter = cpuMs(front.proc.pid, 'main');

    const after = await Promise.all(engines.map((e) => scrapeCounters(e.url, counters)));
    const delta = (name: string): number => after.reduce((sum, m, i) => sum + m.get(name)! - before[i]!.get(name)!, 0);
    const start = Math.min(...records.map((r) => r.sample.startMs));
    const end = Math.max(...records.map((r) => r.sample.startMs + r.sample.totalMs));
    return {
      records,
      windowMs: end - start,
      maxLagMs: loop.maxLagMs,
      hits: delta(PREFIX_HITS),
      queries: delta(PREFIX_QUERIES),
      preemptions: delta(PREEMPTIONS),
      engineTtftMs: (delta(ENGINE_TTFT_SUM) * 1000) / delta(ENGINE_TTFT_COUNT),
      frontCpuMs: cpuBefore === null || cpuAfter === null ? null : cpuAfter - cpuBefore,
      frontMainCpuMs: mainBefore === null || mainAfter === null ? null : mainAfter - mainBefore,
    };
  } finally {
    await stopAll(procs);
  }
}

interface Figures {
  ttft: Distribution;
  hitRate: number;
  rps: number;
  /** Answers per second whose TTFT was within GOOD_TTFT_MS. */
  goodput: number;
  tokps: number;
  errors: number;
  promptTokens: number;
  /** Turns llmgw sent to another endpoint than the conversation's previous turn (null for a proxy: it does not say). */
  moves: number | null;
  ttftMean: number;
  /** The proxy's (or llmgw's) CPU per completed request, ms. */
  cpuPerRequest: number | null;
  /** Of that, its main thread's. */
  mainCpuPerRequest: number | null;
}

function figuresOf(r: PolicyResult): Figures {
  const ok = r.records.filter((x) => x.sample.error === undefined);
  return {
    ttft: distribution(ok.map((x) => x.sample.ttftMs)),
    hitRate: r.hits / r.queries,
    rps: (ok.length * 1000) / r.windowMs,
    goodput: (ok.filter((x) => x.sample.ttftMs <= GOOD_TTFT_MS).length * 1000) / r.windowMs,
    tokps: (ok.reduce((s, x) => s + x.completionTokens, 0) * 1000) / r.windowMs,
    errors: r.records.length - ok.length,
    promptTokens: ok.reduce((s, x) => s + x.promptTokens, 0),
    moves: movesOf(ok),
    ttftMean: ok.reduce((sum, x) => sum + x.sample.ttftMs, 0) / ok.length,
    cpuPerRequest: r.frontCpuMs === null ? null : r.frontCpuMs / ok.length,
    mainCpuPerRequest: r.frontMainCpuMs === null ? null : r.frontMainCpuMs / ok.length,
  };
}

function movesOf(ok: readonly TurnRecord[]): number | null {
  if (ok.some((x) => x.sample.servedBy === undefined)) return null;
  const servedBy = new Map(ok.map((x) => [`${x.conversation}/${x.turn}`, x.sample.servedBy]));
  return ok.filter((x) => x.turn > 0 && servedBy.get(`${x.conversation}/${x.turn - 1}`) !== x.sample.servedBy).length;
}

/** What a budget judges of a policy's run, or of the medians of its runs. */
interface Judged {
  p90: number;
  goodput: number;
  errors: number;
}

const judgedOf = (f: Figures): Judged => ({ p90: f.ttft.p90, goodput: f.goodput, errors: f.errors });

/** Where llmgw misses its budget on this workload ('' when it meets it). */
function misses(budget: Budget, gw: Judged, hash: Judged, rr: Judged): string {
  const out: string[] = [];
  if (gw.errors > 0) out.push('errors');
  if (budget === 'skewed' && gw.p90 > hash.p90) out.push('p90 > hash');
  if (budget === 'overload' && hash.p90 / gw.p90 < OVERLOAD_P90_GAIN) out.push(`p90 not ${OVERLOAD_P90_GAIN}× better than hash`);
  if (budget === 'uniform') {
    if (gw.p90 > hash.p90 * UNIFORM_P90_SLACK) out.push(`p90 > ${UNIFORM_P90_SLACK}× hash`);
    if (gw.goodput / rr.goodput < UNIFORM_GOODPUT_GAIN) out.push(`goodput < ${UNIFORM_GOODPUT_GAIN}× round-robin`);
  }
  return out.length === 0 ? '✓' : `✗ ${out.join(', ')}`;
}

/** One pass's figures per policy, and the ring whose p90 is the median (the lower middle of an even count): what a deployment's draw gives. */
function passFigures(results: Map<Policy, PolicyResult>): { figures: Map<Policy, Figures>; medianRing: Policy } {
  const figures = new Map([...results].map(([p, r]) => [p, figuresOf(r)] as const));
  const byP90 = TENANT_HASHES.slice().sort((a, b) => figures.get(a)!.ttft.p90 - figures.get(b)!.ttft.p90);
  return { figures, medianRing: byP90[Math.floor((byP90.length - 1) / 2)]! };
}

function report(done: readonly Ran[]): void {
  const rows: TableRow[] = [];
  const notes: string[] = [];
  for (const { case: c, workload, passes } of done) {
    const splits = new Map([...TENANT_HASHES, ...(BURNED ? [BURNED] : [])].map((p) => [p, ringSplit(workload, p.ring!)]));
    const busiest = [...splits.values()].map((x) => x.busiestTurns);
    passes.forEach((results, pass) => {
      const { figures, medianRing } = passFigures(results);
      const rr = figures.get(ROUND_ROBIN)!;
      const hash = figures.get(medianRing)!;
      const gw = figures.get(LLMGW)!;
      const which = REPEAT > 1 ? ` (pass ${pass + 1} of ${REPEAT})` : '';
      rows.push({ section: `${c.name}${which}: ${c.what}; ${results.get(ROUND_ROBIN)!.records.length} requests; ${composition(workload, results.get(ROUND_ROBIN)!.records, c.popularity, busiest)}` });
      for (const p of POLICIES) {
        const f = figures.get(p)!;
        const r = results.get(p)!;
        const isGw = p === LLMGW;
        const split = splits.get(p);
        rows.push([
          `  ${p.name}${split ? ` (${split.tenants.join('/')}${p === medianRing && HASH_RINGS > 1 ? ', median' : ''})` : ''}`,
          fmtNum(f.ttft.p50),
          fmtNum(f.ttft.p90),
          fmtNum(f.ttft.p99),
          `${(f.hitRate * 100).toFixed(1)}%`,
          f.moves === null ? '' : String(f.moves),
          fmtNum(f.rps),
          fmtNum(f.goodput),
          fmtNum(f.tokps),
          String(r.preemptions),
          String(f.errors),
          fmtNum(r.engineTtftMs),
          fmtNum(f.ttftMean - r.engineTtftMs),
          f.cpuPerRequest === null ? '' : fmtNum(f.cpuPerRequest),
          f.mainCpuPerRequest === null ? '' : fmtNum(f.mainCpuPerRequest),
          isGw ? fmtRatio(hash.ttft.p50 / f.ttft.p50) : '',
          isGw ? fmtRatio(hash.ttft.p90 / f.ttft.p90) : '',
          isGw ? fmtRatio(rr.ttft.p90 / f.ttft.p90) : '',
          isGw ? fmtRatio(f.goodput / rr.goodput) : '',
          isGw ? misses(c.budget, judgedOf(gw), judgedOf(hash), judgedOf(rr)) : '',
        ]);
        if (f.promptTokens !== rr.promptTokens) notes.push(`${c.name}${which}, ${p.name}: ${f.promptTokens} prompt tokens vs round-robin's ${rr.promptTokens} (errors cut conversations short)`);
        if (r.maxLagMs > 50) notes.push(`${c.name}${which}, ${p.name}: arrivals started up to ${fmtNum(r.maxLagMs)} ms late — the client itself was short of CPU`);
        if (f.errors > 0) {
          const kinds = [...new Set(r.records.filter((x) => x.sample.error !== undefined).map((x) => x.sample.error))].slice(0, 3);
          notes.push(`${c.name}${which}, ${p.name} errors: ${kinds.join('; ')}`);
        }
      }
    });
  }

  const w = BASE_WORKLOAD;
  console.log(
    `quality: ${ENGINES} sim engines (speed ${SPEED} unless named, ${NUM_GPU_BLOCKS} KV blocks = ${NUM_GPU_BLOCKS * 16} tokens each), fresh per policy; ` +
      `${w.conversations} conversations of ${w.systemPrompts} tenants (applications) arriving at ${w.arrivalsPerSecond}/s (Poisson), ${w.turns[0]}–${w.turns[1]} turns, think ~${w.thinkMs} ms`,
  );
  console.log('');
  printTable(
    ['workload / policy', 'TTFT p50 ms', 'p90 ms', 'p99 ms', 'prefix hit', 'moves', 'req/s', 'good/s', 'out tok/s', 'preempt', 'errors', 'engine TTFT', 'path', 'CPU/req', 'main/req', 'gw ×hash p50', '×hash p90', '×rr p90', '×rr good', 'budget'],
    rows,
  );
  console.log(
    [
      'TTFT: request sent → first SSE chunk, streaming, at the client. prefix hit: Σ vllm:prefix_cache_hits_total / Σ queries over the',
      '  engines, delta over the run. req/s, tok/s: completed requests and output tokens per second, first request → last answer.',
      "moves: turns llmgw sent to another endpoint than the conversation's previous turn (its x-llmgw-endpoint header; a proxy does not say).",
      `good/s: goodput, answers per second with TTFT ≤ ${GOOD_TTFT_MS} ms (req/s is capped by the offered load; goodput shows capacity).`,
      "engine TTFT: mean ms from a request's arrival at its engine to its first token, by the engines' own histogram: what scheduling",
      '  decides (queueing, cached prefixes). path: the client\'s mean TTFT less that — the hops through the proxy or llmgw and back,',
      '  and the engines\' HTTP handling. CPU/req: ms of CPU the proxy or llmgw used per completed request (all threads); on 2 shared',
      "  cores it is taken from the engines and the client too. main/req: of that, the main thread's (JavaScript's, where a request's",
      "  own work runs); the rest is V8's helper threads (GC, compilers) and llmgw's worker (pollers, accounting).",
      `tenant-hash: a consistent-hash ring (160 virtual nodes per engine) on the ${TENANT_HEADER} header every request carries — an oracle`,
      '  of affinity; llmgw ignores the header and must infer the tenant from the prompt. Run on each of',
      `  ${HASH_RINGS} ring${HASH_RINGS === 1 ? '' : 's'} (BENCH_QUALITY_HASH_RINGS; in brackets the tenants it places on each engine): which tenants share an`,
      "  engine is the ring's draw. llmgw is compared with the median ring by p90.",
      ...(BURNED ? [`${BURNED.name}: a calibration, not judged (BENCH_QUALITY_BURN_US): ring 0 spinning that much CPU per request before forwarding.`] : []),
      '×: llmgw against the tenant hash and round-robin (other / llmgw for TTFT, llmgw / other for goodput: above 1 is better for llmgw).',
      `budget (llmgw), against the median ring: p90 ≤ hash on every Zipf load; p90 ≥ ${OVERLOAD_P90_GAIN}× better than hash where the hot tenant exceeds an engine;`,
      `  on uniform tenants p90 ≤ ${UNIFORM_P90_SLACK}× hash and goodput ≥ ${UNIFORM_GOODPUT_GAIN}× round-robin. ✗ names what was missed.`,
      'Same offered load for every policy: throughput differs only if a policy could not keep up (its queue drained after the arrivals).',
      'Near saturation TTFT is touchy: two runs of the same policy differed by up to ~1.5× in p90 TTFT on this machine.',
      '  Read ratios under ~1.5× as noise; rerun a workload alone (BENCH_QUALITY_WORKLOADS=zipf-1.2,hot-60) before believing one.',
      ...notes,
    ].join('\n'),
  );
  if (REPEAT > 1) printMedians(done);
}

/**
 * Each workload over the passes: llmgw's p90 and that pass's median ring's, llmgw's
 * goodput over round-robin's, as medians with min–max beside, and the budget judged on
 * the medians (errors summed over the passes).
 */
function printMedians(done: readonly Ran[]): void {
  const rows: TableRow[] = done.map(({ case: c, passes }) => {
    const each = passes.map((results) => {
      const { figures, medianRing } = passFigures(results);
      return { gw: figures.get(LLMGW)!, hash: figures.get(medianRing)!, rr: figures.get(ROUND_ROBIN)!, burned: BURNED ? figures.get(BURNED)! : null };
    });
    type Pass = (typeof each)[number];
    const of = (pick: (x: Pass) => number) => each.map(pick);
    const judged = (policy: (x: Pass) => Figures): Judged => ({
      p90: median(of((x) => policy(x).ttft.p90)),
      goodput: median(of((x) => policy(x).goodput)),
      errors: of((x) => policy(x).errors).reduce((a, b) => a + b, 0),
    });
    return [
      c.name,
      fmtSpread(of((x) => x.gw.ttft.p90), fmtNum),
      fmtSpread(of((x) => x.hash.ttft.p90), fmtNum),
      fmtSpread(of((x) => x.hash.ttft.p90 / x.gw.ttft.p90), fmtRatio),
      fmtSpread(of((x) => x.gw.goodput / x.rr.goodput), fmtRatio),
      misses(c.budget, judged((x) => x.gw), judged((x) => x.hash), judged((x) => x.rr)),
      ...(BURNED ? [fmtSpread(of((x) => x.burned!.ttft.p90), fmtNum)] : []),
    ];
  });
  console.log(`\nMedians over ${REPEAT} passes (min–max):`);
  printTable(['workload', 'llmgw p90 ms', 'median ring p90 ms', '×hash p90', '×rr good', 'budget (medians)', ...(BURNED ? [`ring 0 +${BURN_US} µs p90 ms`] : [])], rows);
}

/**
 * Where ring `ring` of the tenant hash places the workload's tenants: how many tenants on
 * each engine, and the busiest engine's share of the turns. The proxy names ring points
 * by upstream position, so this is the placement it uses.
 */
function ringSplit(workload: ChatWorkload, ring: number): { tenants: number[]; busiestTurns: number } {
  const hashRing = createHashRing(
    Array.from({ length: ENGINES }, (_, i) => i),
    (i) => positionName(i, ring),
  );
  const tenants = Array.from({ length: ENGINES }, () => new Set<number>());
  const turns = new Array<number>(ENGINES).fill(0);
  for (const c of workload.conversations) {
    const at = hashRing.owner(tenantOf(c));
    tenants[at]!.add(c.system);
    turns[at]! += c.turns.length;
  }
  return { tenants: tenants.map((t) => t.size), busiestTurns: Math.max(...turns) / turns.reduce((a, b) => a + b, 0) };
}

/**
 * How much of the prompt traffic is shared prefix (calibration.md: with little sharing
 * the gains vanish, so a result must state it): prompt tokens that are a system prompt,
 * earlier turns of the same conversation, or the new user message. `busiest`: each
 * ring's busiest engine's share of the turns (`ringSplit`).
 */
function composition(workload: ChatWorkload, records: readonly TurnRecord[], popularity: number, busiest: readonly number[]): string {
  const systemTokens = workload.systemPrompts.map((s) => tokenize(s).length);
  let total = 0;
  let system = 0;
  let fresh = 0;
  const convs = new Map(workload.conversations.map((c) => [c.id, c]));
  for (const r of records) {
    if (r.sample.error !== undefined) continue;
    total += r.promptTokens;
    system += systemTokens[convs.get(r.conversation)!.system]!;
    fresh += tokenize(r.messages[r.messages.length - 1]!.content).length;
  }
  const pct = (x: number): string => `${((x / total) * 100).toFixed(0)}%`;
  const used = new Set(workload.conversations.map((c) => c.system)).size;
  const top = workload.conversations.filter((c) => c.system === 0).length / workload.conversations.length;
  return (
    `prompt tokens: ${total.toLocaleString('en-US')} = ${pct(system)} system prompts (${used} of ${workload.systemPrompts.length} in use, ` +
    `${Math.min(...systemTokens)}–${Math.max(...systemTokens)} tokens, zipf ${popularity}, top tenant ${(top * 100).toFixed(0)}% of conversations, ` +
    `${busiest.map((b) => (b * 100).toFixed(0)).join('/')}% of turns on the tenant hash's busiest engine by ring), ` +
    `${pct(total - system - fresh)} earlier turns + template, ${pct(fresh)} new user text`
  );
}
