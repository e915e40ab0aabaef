// Runtime suite: what a message, an ask and a trip through the CPU pool cost, on the
// same thread and across threads, each against a baseline measured in the same run.
import { availableParallelism } from 'node:os';
import { MessageChannel, Worker } from 'node:worker_threads';
import { ActorSystem, address, type ActorRef, type Address } from '../src/runtime/index.js';
import { echo, hashPrefix } from '../src/tasks/index.js';
import { prober, sink, type ProberMsg, type SinkMsg } from './actors.js';
import { fmtDelta, fmtNum, fmtRate, fmtRatio, measure, printTable, type Budget, type Case, type Measurement, type Suite, type TableRow } from './harness.js';

/** Tells per throughput iteration; one ask after them proves they were all handled. */
const TELLS = 10_000;
/** Characters per hashed block (16 tokens at ~4 characters each, like an engine's KV block). */
const BLOCK_CHARS = 64;
const PROMPT_SIZES = [8 * 1024, 64 * 1024];

const THROUGHPUT: Budget = { time: 2_000, maxSamples: 1_000, warmupTime: 500, maxWarmupSamples: 100 };
const LATENCY: Budget = { time: 1_500, maxSamples: 200_000, warmupTime: 300, maxWarmupSamples: 20_000 };

export const suite: Suite = {
  name: 'runtime',
  description: 'actor messages/s and ask round trips on one thread and across threads; cost of the CPU pool hop',
  run,
};

/** One line of the table: a measurement, what one iteration counts as, and its baseline. */
interface Line {
  label: string;
  /** How the `vs` column names this line when it is another line's baseline. */
  short: string;
  m: Measurement;
  /** Operations per iteration: per-op figures divide by it (messages in a tell batch). */
  ops: number;
  base?: Line;
  /** Repeats a line above against another baseline: only the comparison columns are printed. */
  ratioOnly?: boolean;
}

async function run(): Promise<void> {
  const system = await ActorSystem.start({ threads: [{ name: 'w1' }, { name: 'w2' }] });
  const raw = await startRawEcho();
  try {
    await runWith(system, raw);
  } finally {
    await raw.close();
    await system.shutdown();
  }
}

async function runWith(system: ActorSystem, raw: RawEcho): Promise<void> {
  const spawnSink = (name: string, thread: string): Promise<ActorRef<SinkMsg>> => system.spawn(sink, { address: address(name), thread, args: undefined });
  const spawnProber = (name: string, thread: string): Promise<ActorRef<ProberMsg>> => system.spawn(prober, { address: address(name), thread, args: undefined });
  const tpMain = await spawnSink('tp-main', 'main');
  const tpW1 = await spawnSink('tp-w1', 'w1');
  const latMain = await spawnSink('lat-main', 'main');
  const latW1 = await spawnSink('lat-w1', 'w1');
  await spawnSink('lat-w2', 'w2');
  const probeMain = await spawnProber('probe-main', 'main');
  const probeW1 = await spawnProber('probe-w1', 'w1');
  // Every thread's directory now knows every actor: no first message takes the detour via main.
  await system.barrier();
  for (const [name, thread] of [['tp-w1', 'w1'], ['lat-w1', 'w1'], ['lat-w2', 'w2'], ['probe-w1', 'w1']] as const) {
    if (system.where(name) !== thread) throw new Error(`bench actor '${name}' runs on '${system.where(name)}', expected '${thread}'`);
  }

  // ---- 1. messages/s ---------------------------------------------------------------------
  const sent = new Map<ActorRef<SinkMsg>, number>();
  const tellBatch = (ref: ActorRef<SinkMsg>) => async (): Promise<void> => {
    for (let i = 0; i < TELLS; i++) ref.tell({ type: 'hit', n: i });
    sent.set(ref, (sent.get(ref) ?? 0) + TELLS);
    await ref.ask({ type: 'count' });
  };
  const tp = await measure(THROUGHPUT, [
    { name: 'tp main', fn: tellBatch(tpMain), async: true },
    { name: 'tp w1', fn: tellBatch(tpW1), async: true },
  ]);
  for (const [ref, n] of sent) {
    const got = await ref.ask({ type: 'count' });
    if (got !== n) throw new Error(`actor '${ref.name}' handled ${got} of ${n} messages told`);
  }

  // ---- 2. ask round trips ----------------------------------------------------------------
  const floor = (): Promise<number> => Promise.resolve(0);
  const probe = (ref: ActorRef<ProberMsg>, target: Address<SinkMsg>) => async () => ({ overriddenDuration: await ref.ask({ type: 'probe', target }) });
  const ask = await measure(LATENCY, [
    { name: 'floor', fn: () => floor(), async: true },
    { name: 'main>main', fn: () => latMain.ask({ type: 'ping' }), async: true },
    { name: 'raw', fn: raw.ping, async: true },
    { name: 'main>w1', fn: () => latW1.ask({ type: 'ping' }), async: true },
    { name: 'in main>main', fn: probe(probeMain, address<SinkMsg>('lat-main')), async: true, innerTimed: true },
    { name: 'in w1>w1', fn: probe(probeW1, address<SinkMsg>('lat-w1')), async: true, innerTimed: true },
    { name: 'in w1>w2', fn: probe(probeW1, address<SinkMsg>('lat-w2')), async: true, innerTimed: true },
  ]);

  // ---- 3. the CPU pool hop ---------------------------------------------------------------
  const small = { id: 1, text: 'hello' };
  const prompts = PROMPT_SIZES.map((size) => ({ size, input: { text: promptText(size), blockChars: BLOCK_CHARS } }));
  for (const { size, input } of prompts) {
    // The pool must compute what the direct call does, or the comparison means nothing.
    const direct = hashPrefix(input);
    const pooled = await system.cpu.run<Float64Array>('hashPrefix', input);
    if (pooled.length !== direct.length || pooled.some((h, i) => h !== direct[i])) throw new Error(`hashPrefix of ${size} chars differs through the pool`);
  }
  const cpuCases: Case[] = [
    { name: 'echo direct', fn: () => echo(small), async: false },
    { name: 'echo pool', fn: () => system.cpu.run('echo', small), async: true },
  ];
  for (const { size, input } of prompts) {
    cpuCases.push(
      { name: `hash ${size} direct`, fn: () => hashPrefix(input), async: false },
      { name: `hash ${size} pool`, fn: () => system.cpu.run('hashPrefix', input), async: true },
    );
  }
  const cpu = await measure(LATENCY, cpuCases);

  // ---- report ----------------------------------------------------------------------------
  const get = (map: Map<string, Measurement>, name: string): Measurement => map.get(name)!;
  const tpMainL: Line = { label: 'tell → main actor', short: 'tell → main', m: get(tp, 'tp main'), ops: TELLS + 1 };
  const floorL: Line = { label: 'direct call returning a Promise (floor)', short: 'floor', m: get(ask, 'floor'), ops: 1 };
  const mainMainL: Line = { label: 'ask main → main', short: 'main → main', m: get(ask, 'main>main'), ops: 1, base: floorL };
  const rawL: Line = { label: 'bare MessagePort echo, main ↔ worker', short: 'bare echo', m: get(ask, 'raw'), ops: 1, base: mainMainL };
  const inMainL: Line = { label: 'ask main → main, timed in actor', short: 'main → main (in actor)', m: get(ask, 'in main>main'), ops: 1 };
  const inW1L: Line = { label: 'ask w1 → w1, timed in actor', short: 'w1 → w1 (in actor)', m: get(ask, 'in w1>w1'), ops: 1, base: inMainL };
  const echoL: Line = { label: 'echo(small), direct call', short: 'echo direct', m: get(cpu, 'echo direct'), ops: 1 };
  const rows: TableRow[] = [
    { section: `1. messages/s: ${TELLS.toLocaleString('en-US')} tells + 1 ask per iteration; figures per message (amortized)` },
    row(tpMainL),
    row({ label: 'tell → w1 actor', short: 'tell → w1', m: get(tp, 'tp w1'), ops: TELLS + 1, base: tpMainL }),
    { section: '2. ask round trip, one at a time (sink actor replies at once)' },
    row(floorL),
    row(mainMainL),
    row(rawL),
    row({ label: 'ask main → w1', short: 'main → w1', m: get(ask, 'main>w1'), ops: 1, base: mainMainL }),
    row({ label: '  ↳ the same ask against the bare echo', short: '', m: get(ask, 'main>w1'), ops: 1, base: rawL, ratioOnly: true }),
    row(inMainL),
    row(inW1L),
    row({ label: 'ask w1 → w2, timed in actor', short: 'w1 → w2 (in actor)', m: get(ask, 'in w1>w2'), ops: 1, base: inW1L }),
    { section: `3. CPU pool hop (piscina, maxThreads ${Math.max(1, availableParallelism() - 1)}) vs a direct call on main` },
    row(echoL),
    row({ label: "cpu.run('echo', small)", short: 'echo pool', m: get(cpu, 'echo pool'), ops: 1, base: echoL }),
  ];
  for (const { size } of prompts) {
    const direct: Line = { label: `hashPrefix ${size / 1024} KB prompt, direct`, short: `hash ${size / 1024} KB direct`, m: get(cpu, `hash ${size} direct`), ops: 1 };
    rows.push(row(direct), row({ label: `cpu.run('hashPrefix') ${size / 1024} KB`, short: 'pool', m: get(cpu, `hash ${size} pool`), ops: 1, base: direct }));
  }

  console.log('runtime: ActorSystem with threads main, w1, w2; tinybench, warmup on');
  console.log('');
  printTable(['case', 'vs', 'p50 µs', 'p99 µs', 'ops/s', '×p50', '×p99', '×ops/s', '+p50 µs', 'main µs/op', 'samples'], rows, 2);
  console.log(
    [
      'ops/s: 1e6 / mean µs per op (section 1: messages/s). ×: this row over its `vs` row (×ops/s below 1 = slower).',
      '+p50 µs: added over the `vs` row. main µs/op: main-thread event-loop busy time per op (eventLoopUtilization),',
      '  i.e. what the op costs the thread that serves requests; — where the op is timed on another thread.',
      'bare echo: a worker with no runtime answering a MessagePort batch at once: the floor of any cross-thread ask.',
      '"timed in actor": a prober actor times one ask to the target with performance.now() on its own thread;',
      '  tinybench records that duration (overriddenDuration), so the caller\'s hop to the prober is not in it.',
      '  On a worker the prober has just been woken by the request to probe, so its caches are colder than main\'s.',
      'The floor and echo(small) direct sit at the timer\'s resolution (a timestamp costs ~0.04 µs): read them as "≈ 0".',
      `hashPrefix: ${BLOCK_CHARS}-char blocks, the Float64Array of block hashes comes back by structured clone.`,
    ].join('\n'),
  );
}

function row(l: Line): string[] {
  const p50 = l.m.p50Us / l.ops;
  const p99 = l.m.p99Us / l.ops;
  const rate = (1e6 * l.ops) / l.m.meanUs;
  const b = l.base;
  const bp50 = b ? b.m.p50Us / b.ops : undefined;
  const bp99 = b ? b.m.p99Us / b.ops : undefined;
  const brate = b ? (1e6 * b.ops) / b.m.meanUs : undefined;
  const own = (s: string): string => (l.ratioOnly ? '' : s);
  return [
    l.label,
    b?.short ?? '',
    own(fmtNum(p50)),
    own(fmtNum(p99)),
    own(fmtRate(rate)),
    fmtRatio(bp50 === undefined ? undefined : p50 / bp50),
    fmtRatio(bp99 === undefined ? undefined : p99 / bp99),
    fmtRatio(brate === undefined ? undefined : rate / brate),
    fmtDelta(bp50 === undefined ? undefined : p50 - bp50),
    own(fmtNum(l.m.mainBusyUs === undefined ? undefined : l.m.mainBusyUs / l.ops)),
    own(String(l.m.samples)),
  ];
}

interface RawEcho {
  /** One round trip: a one-envelope batch out, a one-reply batch back. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** A worker with no runtime that echoes on a MessageChannel port, as the runtime's links use. */
async function startRawEcho(): Promise<RawEcho> {
  const { port1, port2 } = new MessageChannel();
  const worker = new Worker(new URL('./echo-worker.js', import.meta.url), { workerData: { port: port2 }, transferList: [port2] });
  let waiting: (() => void) | undefined;
  port1.on('message', () => {
    const w = waiting;
    waiting = undefined;
    w?.();
  });
  // The same envelope shape an ask to a worker actor posts.
  const ping = (): Promise<void> =>
    new Promise<void>((resolve) => {
      waiting = resolve;
      port1.postMessage([{ k: 'msg', to: 'lat-w1', from: 'main', hops: 1, msg: { type: 'ping' }, ask: 1 }]);
    });
  await ping(); // the worker is up
  return {
    ping,
    close: async () => {
      port1.close();
      await worker.terminate();
    },
  };
}

/** A deterministic prompt of `size` characters (content does not change hashing cost). */
function promptText(size: number): string {
  const words = ['the', 'system', 'prompt', 'says', 'answer', 'briefly', 'and', 'cite', 'sources', 'user', 'asks', 'about', 'kv', 'cache'];
  let s = '';
  for (let i = 0; s.length < size; i++) s += words[(i * 7 + (i >> 3)) % words.length] + ' ';
  return s.slice(0, size);
}
