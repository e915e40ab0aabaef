// Admission suite: does a batch flood starve interactive traffic? Two simulated engines;
// a steady platinum interactive load (streaming, Poisson arrivals) first alone, then
// while a bronze batch load keeps ten times as many requests outstanding as the engines
// have batch slots. The same runs go through llmgw with admission on and with it off,
// so the table shows the mechanism, not the luck: without admission the engines queue
// first come, first served and platinum waits behind the flood.

import { request } from 'undici';
import { fmtNum, fmtRatio, printTable, type Suite, type TableRow } from './harness.js';
import { closedLoop, LoadClient, openLoop, type Sample } from './load/http-load.js';
import { extraConfigFromEnv, llmgwConfig, startLlmgw, startSim, type RunningLlmgw } from './load/llmgw.js';
import { assertAlive, startedAll, stopAll, type Launched } from './load/processes.js';
import { createRng } from './load/rng.js';
import { distribution, summarize } from './load/stats.js';

const MODEL = 'bench-admission';
const ENGINES = 2;
/** Batch slots per engine: small for a GPU, so that ten times the slots is a flood one client process can drive. */
const MAX_NUM_SEQS = 16;
const SPEED = 0.5;
const MAX_TOKENS = 24;
/** Platinum arrivals as a share of what the fleet serves, measured first. */
const PLATINUM_SHARE = 0.2;
const RUN_MS = 15_000;
/** Bronze keeps this many times the fleet's batch slots outstanding: a flood ~10× capacity. */
const FLOOD_FACTOR = 10;

const body = (i: number, stream: boolean): string =>
  JSON.stringify({ model: MODEL, prompt: `request ${i}: summarise the quarterly report in a few words`, max_tokens: MAX_TOKENS, stream });

interface Run {
  label: string;
  platinum: Sample[];
  bronze: Sample[];
  bronzeWallMs: number;
  /** llmgw's own view of platinum TTFT (its histogram, streaming requests only): the bucket holding p99, ms. */
  serverP99Ms: number;
  /** Platinum requests that waited for admission at all (the rest went straight through). */
  platinumQueued: number;
}

export const suite: Suite = {
  name: 'admission',
  description: 'platinum TTFT alone vs under a 10× bronze flood, admission on vs off (2 sim engines)',
  async run() {
    const procs: Launched[] = [];
    try {
      const sims = await startedAll(
        Array.from({ length: ENGINES }, (_, i) => startSim({ model: MODEL, speed: SPEED, seed: i, maxNumSeqs: MAX_NUM_SEQS })),
        procs,
      );
      const endpoints = sims.map((s, i) => ({ id: `engine-${i}`, url: s.url }));
      const extra = extraConfigFromEnv();
      const router = (enabled: boolean) => ({
        router: {
          // Saturation is read from scrapes: poll often enough that a flood is seen within a few requests.
          poll_interval_ms: 100,
          admission: { enabled, priority_header: true },
        },
      });
      const [on, off] = await startedAll(
        [
          startLlmgw(llmgwConfig({ model: MODEL, endpoints, extra: [router(true), extra] })),
          startLlmgw(llmgwConfig({ model: MODEL, endpoints, extra: [router(false), extra] })),
        ],
        procs,
      );

      const slots = ENGINES * MAX_NUM_SEQS;
      const capacity = await measureCapacity(on!, slots);
      await measureCapacity(off!, slots); // the same history for both servers
      const rate = capacity * PLATINUM_SHARE;
      const rng = createRng(11);
      const schedule: number[] = [];
      for (let t = rng.exp(1000 / rate); t < RUN_MS; t += rng.exp(1000 / rate)) schedule.push(t);

      const runs: Run[] = [];
      for (const [label, gw, flood] of [
        ['alone, admission on', on!, false],
        ['alone, admission off', off!, false],
        ['flood, admission on', on!, true],
        ['flood, admission off', off!, true],
      ] as const) {
        runs.push(await scenario(label, gw, schedule, flood ? FLOOD_FACTOR * slots : 0));
        assertAlive(procs);
      }

      const alone = new Map(runs.filter((r) => r.label.startsWith('alone')).map((r) => [r.label.endsWith('on') ? 'on' : 'off', distribution(r.platinum.filter((s) => !s.error).map((s) => s.ttftMs))]));
      const rows: TableRow[] = runs.map((r) => {
        const p = distribution(r.platinum.filter((s) => !s.error).map((s) => s.ttftMs));
        const base = alone.get(r.label.endsWith('on') ? 'on' : 'off')!;
        const b = summarize(r.bronze, r.bronzeWallMs);
        const perr = r.platinum.filter((s) => s.error).length;
        const shed = r.bronze.filter((s) => s.status === 429).length;
        return [
          r.label,
          String(p.n),
          fmtNum(p.p50),
          fmtNum(p.p99),
          fmtRatio(p.p99 / base.p99),
          `≤ ${fmtNum(r.serverP99Ms)}`,
          r.label.endsWith('off') ? '' : String(r.platinumQueued),
          String(perr),
          r.bronze.length === 0 ? '' : String(b.ok),
          r.bronze.length === 0 ? '' : String(shed),
          r.bronze.length === 0 ? '' : String(b.errors - shed),
          r.bronze.length === 0 ? '' : fmtNum(b.rps),
        ];
      });
      console.log(`fleet: ${ENGINES} sim engines × ${MAX_NUM_SEQS} batch slots at speed ${SPEED}; measured capacity ${fmtNum(capacity)} req/s (${MAX_TOKENS}-token answers)`);
      console.log(`platinum: streaming, Poisson at ${fmtNum(rate)} req/s (${PLATINUM_SHARE * 100}% of capacity) for ${RUN_MS / 1000} s; bronze: ${FLOOD_FACTOR * slots} outstanding (${FLOOD_FACTOR}× the slots), same duration`);
      console.log('');
      printTable(['run', 'platinum n', 'TTFT p50 ms', 'TTFT p99 ms', '×p99 vs alone', 'llmgw p99 ms', 'plat queued', 'plat errors', 'bronze ok', 'bronze 429', 'bronze other err', 'bronze req/s'], rows);
      console.log(
        [
          '×p99 vs alone: platinum p99 TTFT over its value alone through the same server (budget with admission: ≤ 1.5×).',
          "llmgw p99: the same p99 as llmgw measured it (its TTFT histogram's bucket bound): a gap to the client's figure is time spent in the client.",
          'plat queued: platinum requests that waited for admission at all; the rest went straight to an engine.',
          'The flood stops after the run; the closed loop then waits for every bronze request: "bronze ok" counts those that completed.',
        ].join('\n'),
      );
    } finally {
      await stopAll(procs);
    }
  },
};

/**
 * Completed requests/s with every batch slot busy: a closed loop at twice the slot count,
 * so the engines queue — which is also how the router learns their batch capacity, as it
 * would from the first busy minute of a real fleet. (Before that, a burst reaches the
 * engines whole: the gate can only count against a capacity it has seen.)
 */
async function measureCapacity(gw: RunningLlmgw, slots: number): Promise<number> {
  const client = new LoadClient(gw.url, 2 * slots);
  const samples: Sample[] = [];
  const wall = await closedLoop({ concurrency: 2 * slots, durationMs: 3_000 }, async (i) => void samples.push((await client.post('/v1/completions', body(i, false))).sample));
  await client.close();
  return summarize(samples, wall).rps;
}

/** Platinum requests admitted so far, and how many of them went straight through (queue time 0). */
async function platinumAdmissions(gw: RunningLlmgw): Promise<{ admitted: number; direct: number }> {
  const text = await (await request(`${gw.adminUrl}/metrics`)).body.text();
  const read = (re: RegExp): number => Number(text.match(re)?.[1] ?? 0);
  return {
    admitted: read(/^llmgw_admission_queue_seconds_count\{[^}]*band="platinum"[^}]*\} (\S+)$/m),
    direct: read(/^llmgw_admission_queue_seconds_bucket\{le="0",[^}]*band="platinum"[^}]*\} (\S+)$/m),
  };
}

/** Cumulative counts of llmgw's TTFT histogram for streaming requests (platinum's, here), by bucket bound in ms. */
async function streamTtftBuckets(gw: RunningLlmgw): Promise<Map<number, number>> {
  const text = await (await request(`${gw.adminUrl}/metrics`)).body.text();
  const out = new Map<number, number>();
  for (const m of text.matchAll(/^llmgw_request_ttft_seconds_bucket\{le="([^"]+)",model="[^"]*",stream="true"\} (\S+)$/gm)) {
    out.set(m[1] === '+Inf' ? Infinity : Number(m[1]) * 1000, Number(m[2]));
  }
  return out;
}

/** The bucket bound under which 99% of the requests between two scrapes fell. */
function p99Bucket(before: Map<number, number>, after: Map<number, number>): number {
  const bounds = [...after.keys()].sort((a, b) => a - b);
  const total = (after.get(Infinity) ?? 0) - (before.get(Infinity) ?? 0);
  for (const b of bounds) if ((after.get(b) ?? 0) - (before.get(b) ?? 0) >= 0.99 * total) return b;
  return Infinity;
}

async function scenario(label: string, gw: RunningLlmgw, schedule: number[], bronzeOutstanding: number): Promise<Run> {
  const before = await streamTtftBuckets(gw);
  const admittedBefore = await platinumAdmissions(gw);
  const platinumClient = new LoadClient(gw.url, 64);
  const bronzeClient = new LoadClient(gw.url, Math.max(1, bronzeOutstanding));
  const platinum: Sample[] = [];
  const bronze: Sample[] = [];
  let bronzeWallMs = 0;
  const flood =
    bronzeOutstanding > 0
      ? closedLoop({ concurrency: bronzeOutstanding, durationMs: RUN_MS + 1_000 }, async (i) => {
          bronze.push((await bronzeClient.post('/v1/completions', body(i, false), { headers: { 'x-llmgw-priority': 'bronze' } })).sample);
        }).then((ms) => void (bronzeWallMs = ms))
      : Promise.resolve();
  // Let the flood build its queue before platinum starts.
  if (bronzeOutstanding > 0) await new Promise((r) => setTimeout(r, 1_000));
  await openLoop(schedule, async (i) => {
    platinum.push((await platinumClient.post('/v1/completions', body(100_000 + i, true), { headers: { 'x-llmgw-priority': 'platinum' } })).sample);
  });
  await flood;
  await Promise.all([platinumClient.close(), bronzeClient.close()]);
  const admittedAfter = await platinumAdmissions(gw);
  const platinumQueued = admittedAfter.admitted - admittedBefore.admitted - (admittedAfter.direct - admittedBefore.direct);
  return { label, platinum, bronze, bronzeWallMs, serverP99Ms: p99Bucket(before, await streamTtftBuckets(gw)), platinumQueued };
}
