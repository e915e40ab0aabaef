// Recall: lower-band requests sent to an engine beyond its batch (a stale view let them
// through, or its size is unknown) are taken back when a first-band request is sent
// there, so it finds a free slot instead of waiting behind them, and each recalled
// request is queued again and served once, with nothing lost or counted twice.

import type { IncomingMessage, ServerResponse } from 'node:http';
import { request } from 'undici';
import * as assert from 'uvu/assert';
import { until } from '../support/until.js';
import { suite } from '../support/uvu.js';
import { startInProcess, type InProcessPort } from './in-process.js';

const test = suite('recall: a first-band request does not wait behind lower-band requests (in-process data port, a first-come-first-served engine)');

const chunk = (delta: object, finish: string | null = null): string =>
  `data: ${JSON.stringify({ id: 'chatcmpl-x', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`;
const USAGE = `data: ${JSON.stringify({ id: 'chatcmpl-x', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [], usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } })}\n\n`;

interface Held {
  prompt: string;
  res: ServerResponse;
  done: boolean;
  /** Its whole answer was sent, all but the stream's end. */
  whole: boolean;
}

/**
 * An engine that runs `batch` requests at once and queues the rest first come, first
 * served, as vLLM's default policy does: a request gets its first token when it is
 * scheduled (or, `prefillOnCall`, when the spec says its prompt is prefilled: `prefill`),
 * and its answer when the spec says so (`finish`). A request whose connection closes
 * first is dropped from its queue or frees its slot. A prompt is known by its first word.
 */
class FcfsEngine {
  readonly arrivals: string[] = [];
  readonly started: string[] = [];
  readonly cancelled: string[] = [];
  private readonly running: Held[] = [];
  private readonly waiting: Held[] = [];

  constructor(
    private readonly batch: number,
    private readonly prefillOnCall = false,
  ) {}

  handle = (req: IncomingMessage, res: ServerResponse, raw: Buffer): void => {
    const body = JSON.parse(raw.toString('utf8')) as { messages: { content: string }[] };
    const h: Held = { prompt: body.messages[0]!.content.split(' ', 1)[0]!, res, done: false, whole: false };
    this.arrivals.push(h.prompt);
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.flushHeaders();
    res.on('close', () => {
      if (h.done) return;
      this.cancelled.push(h.prompt);
      this.drop(this.waiting, h);
      if (this.drop(this.running, h)) this.schedule();
    });
    this.waiting.push(h);
    this.schedule();
  };

  get queued(): string[] {
    return this.waiting.map((h) => h.prompt);
  }

  /** Sends `prompt`'s answer and ends its stream (what is left of it, after `whole`). */
  finish(prompt: string): void {
    const h = this.runningOne(prompt);
    h.done = true;
    this.drop(this.running, h);
    h.res.end((h.whole ? '' : chunk({ content: 'ok' }, 'stop') + USAGE) + 'data: [DONE]\n\n');
    this.schedule();
  }

  /** Sends `prompt`'s first chunk: its prompt is prefilled (`prefillOnCall`). */
  prefill(prompt: string): void {
    this.runningOne(prompt).res.write(chunk({ role: 'assistant', content: '' }));
  }

  /** Sends all of `prompt`'s answer but the stream's end. */
  whole(prompt: string): void {
    const h = this.runningOne(prompt);
    h.whole = true;
    h.res.write(chunk({ content: 'ok' }, 'stop') + USAGE);
  }

  private runningOne(prompt: string): Held {
    const h = this.running.find((r) => r.prompt === prompt);
    if (!h) throw new Error(`'${prompt}' is not running (running: ${this.running.map((r) => r.prompt).join(', ')})`);
    return h;
  }

  get runningNow(): string[] {
    return this.running.map((h) => h.prompt);
  }

  isRunning(prompt: string): boolean {
    return this.running.some((r) => r.prompt === prompt);
  }

  private schedule(): void {
    while (this.running.length < this.batch && this.waiting.length > 0) {
      const h = this.waiting.shift()!;
      this.running.push(h);
      this.started.push(h.prompt);
      if (!this.prefillOnCall) h.res.write(chunk({ role: 'assistant', content: '' }));
    }
  }

  private drop(list: Held[], h: Held): boolean {
    const at = list.indexOf(h);
    if (at !== -1) list.splice(at, 1);
    return at !== -1;
  }
}

interface Reply {
  status: number;
  body: string;
}

function send(inProcess: InProcessPort, prompt: string, band: string, stream: boolean, signal?: AbortSignal): Promise<Reply> {
  return request(`${inProcess.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-llmgw-priority': band },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: prompt }], max_tokens: 2, stream }),
    ...(signal ? { signal } : {}),
  })
    .then(async (r) => ({ status: r.statusCode, body: await r.body.text() }))
    // A client that left, or a failed test closing the port under requests still out: the error is the reply.
    .catch((err: Error) => ({ status: 0, body: err.message }));
}

/** Sends lower-band requests one at a time, so that the engine holds them in a known order. */
async function inOrder(inProcess: InProcessPort, engine: FcfsEngine, sends: ((prompt: string) => Promise<Reply>)[]): Promise<Promise<Reply>[]> {
  const replies: Promise<Reply>[] = [];
  for (const [i, go] of sends.entries()) {
    replies.push(go(`b${i + 1}`));
    await until(() => engine.arrivals.length === i + 1, `b${i + 1} at the engine`);
  }
  return replies;
}

/**
 * Five batch requests reach an engine of two slots while its metrics are not scraped
 * yet (admission then holds nothing back below its stale limit); then a scrape shows
 * what they did: two running, three queued, and the batch size as configured. b4's
 * client can leave (`b4Left`); b5 is streamed to its client, the others collected.
 */
async function overfill(inProcess: InProcessPort, engine: FcfsEngine, b4Left = new AbortController()): Promise<Promise<Reply>[]> {
  const collected = (prompt: string): Promise<Reply> => send(inProcess, prompt, 'bronze', false);
  const bronze = await inOrder(inProcess, engine, [collected, collected, collected, (p) => send(inProcess, p, 'bronze', false, b4Left.signal), (p) => send(inProcess, p, 'bronze', true)]);
  assert.equal(engine.started, ['b1', 'b2']);
  assert.equal(engine.queued, ['b3', 'b4', 'b5']);
  // Scraped a millisecond after b5 was sent at the latest: the router counts a request
  // sent in the scrape's own millisecond as sent after it (not in the engine's counts),
  // and then held one request more in the engine than it had sent, for good, as no
  // later scrape comes here (seen once in a full run of the suite).
  const sent = Date.now();
  await until(() => Date.now() > sent, 'the clock past the last send');
  inProcess.table.applyLoad('a', Date.now(), { running: 2, waiting: 3, kvUsage: 0.1 }, null);
  return bronze;
}

/** What the engine and the router hold, for a failure's message. */
function stateOf(inProcess: InProcessPort, engine: FcfsEngine): string {
  const e = inProcess.table.get('a')!;
  const admission = inProcess.admissions!.get('m')!;
  return JSON.stringify({
    engine: { arrivals: engine.arrivals, started: engine.started, cancelled: engine.cancelled, queued: engine.queued, running: engine.runningNow },
    endpoint: { inflight: e.inflight, inflightAtLoad: e.inflightAtLoad, load: e.load, scrapedMsAgo: Date.now() - e.loadAt! },
    bronze: { ...admission.queue.stats()[3], held: admission.holdReason(3, Date.now()) },
    records: inProcess.records.map((r) => `${r.status} ${r.error ?? ''}`),
  });
}

function config(recall: boolean): string {
  return `models: [{ name: m }]
router:
  admission: { priority_header: true, stale_inflight_per_replica: 100, recall: ${recall} }
endpoints:
  - { id: a, url: "http://127.0.0.1:9", models: [m], max_num_seqs: 2 }
`;
}

test('a first-band request sent to a full engine takes back the newest lower-band requests there and starts at once; each recalled one is served once, or leaves with its client', async () => {
  const engine = new FcfsEngine(2);
  const inProcess = await startInProcess(config(true), { a: engine.handle });
  try {
    const b4Left = new AbortController();
    const bronze = await overfill(inProcess, engine, b4Left);
    const platinum = send(inProcess, 'p1', 'platinum', true);
    await until(() => engine.isRunning('p1'), 'platinum running');
    assert.equal(engine.started.slice(0, 3), ['b1', 'b2', 'p1'], 'platinum took the slot of the newest running one');
    assert.equal([...engine.cancelled].sort(), ['b2', 'b3', 'b4', 'b5'], 'the three queued, and the newest running one (collected: nothing of it had reached its client)');
    assert.equal(engine.queued, [], 'nothing sent again while the engine is full');
    const admission = inProcess.admissions!.get('m')!;
    assert.is(admission.queue.stats()[3]!.recalled, 4);
    assert.is(admission.queue.stats()[3]!.queued, 4, 'queued again in llmgw');
    b4Left.abort();
    await until(() => admission.queue.stats()[3]!.cancelled === 1, "b4's client left: it leaves the queue").catch((err: Error) => {
      throw new Error(`${err.message}: ${stateOf(inProcess, engine)}`);
    });
    engine.finish('p1');
    assert.is((await platinum).status, 200);

    // Served as slots free: each recalled request exactly once more.
    engine.finish('b1');
    for (let served = 0; served < 3; served++) {
      await until(() => engine.runningNow.length === 1, 'a recalled request running again').catch((err: Error) => {
        throw new Error(`${err.message}; ${served} served again: ${stateOf(inProcess, engine)}`);
      });
      engine.finish(engine.runningNow[0]!);
    }
    const replies = await Promise.all(bronze);
    for (const [i, r] of replies.entries()) {
      if (i === 3) continue;
      assert.is(r.status, 200, r.body);
      assert.match(r.body, i === 4 ? /"content":"ok"[\s\S]*\[DONE\]/ : /"content":"ok"/, r.body);
    }
    assert.equal(engine.arrivals.slice(0, 6), ['b1', 'b2', 'b3', 'b4', 'b5', 'p1']);
    assert.equal(engine.arrivals.slice(6), ['b2', 'b3', 'b5'], `${stateOf(inProcess, engine)}: sent again after the first-band request, once each, in the order they first came; not b4, whose client left`);
    await until(() => inProcess.records.length === 6, 'six usage records');
    for (const r of inProcess.records) {
      if (r.status === 499) continue;
      assert.is(r.status, 200, `${r.id}: ${r.error}`);
      assert.is(r.attempts, 1, 'a recall is not a failed attempt');
      assert.is(r.completionTokens, 2, 'charged once, for the answer served');
    }
    const left = inProcess.records.filter((r) => r.status === 499);
    assert.is(left.length, 1);
    assert.is(left[0]!.attempts, 0, 'b4: its recalled attempt is no attempt');
    assert.is(left[0]!.endpoint, null);
    const e = inProcess.table.get('a')!;
    assert.is(e.inflight, 0);
    assert.is(e.streaming, 0);
    assert.equal(e.recallable, []);
    assert.is(e.health.consecutiveFailures, 0, 'a recall says nothing against the engine');
    assert.is(e.health.blocked(Date.now()), null);
  } finally {
    await inProcess.close();
  }
});

test('an answer already whole is the client\'s: it is served, and an older one is recalled instead', async () => {
  const engine = new FcfsEngine(2);
  const inProcess = await startInProcess(config(true), { a: engine.handle });
  try {
    const collected = (prompt: string): Promise<Reply> => send(inProcess, prompt, 'bronze', false);
    const bronze = await inOrder(inProcess, engine, [collected, collected]);
    inProcess.table.applyLoad('a', Date.now(), { running: 2, waiting: 0, kvUsage: 0.1 }, null);
    // b2's answer is whole at the router; only the stream's end is still to come.
    engine.whole('b2');
    await until(() => inProcess.table.get('a')!.recallable.length === 1, 'b2 no longer recallable');
    const platinum = send(inProcess, 'p1', 'platinum', true);
    await until(() => engine.isRunning('p1'), 'platinum running');
    assert.equal(engine.cancelled, ['b1']);
    engine.finish('b2');
    engine.finish('p1');
    await until(() => engine.isRunning('b1'), 'b1 sent again');
    engine.finish('b1');
    assert.is((await platinum).status, 200);
    for (const r of await Promise.all(bronze)) assert.is(r.status, 200, r.body);
  } finally {
    await inProcess.close();
  }
});

test('a first-band request takes back the newest lower-band prompts awaiting their first token past the pacing budget: a batch job that ran alone, unpaced, left them ahead of it', async () => {
  const engine = new FcfsEngine(8, true);
  const inProcess = await startInProcess(
    `models: [{ name: m }]
router:
  admission: { priority_header: true, stale_inflight_per_replica: 100, prefill_tokens_per_replica: 1024, prefill_ms_per_replica: 0 }
endpoints:
  - { id: a, url: "http://127.0.0.1:9", models: [m], max_num_seqs: 8 }
`,
    { a: engine.handle },
  );
  try {
    // ~1,000 prompt tokens each; no first band yet, so nothing paces them.
    const long = (prompt: string): Promise<Reply> => send(inProcess, `${prompt} ${'x'.repeat(4_000)}`, 'bronze', true);
    const bronze = await inOrder(inProcess, engine, [long, long, long, long]);
    assert.equal(engine.started, ['b1', 'b2', 'b3', 'b4'], 'a slot each: only their prefill is ahead');
    const platinum = send(inProcess, 'p1', 'platinum', true);
    await until(() => engine.isRunning('p1') && engine.cancelled.length === 3, 'platinum running, three taken back').catch((err: Error) => {
      throw new Error(`${err.message}: ${stateOf(inProcess, engine)}`);
    });
    assert.equal([...engine.cancelled].sort(), ['b2', 'b3', 'b4'], 'the newest, until one prompt of ~1,000 tokens is ahead of it (budget 1,024); never the oldest');
    engine.prefill('p1');
    engine.finish('p1');
    assert.is((await platinum).status, 200);
    // Paced from here: each recalled one goes again once the prompt before it is prefilled.
    for (const b of ['b1', 'b2', 'b3', 'b4']) {
      await until(() => engine.isRunning(b), `${b} running`).catch((err: Error) => {
        throw new Error(`${err.message}: ${stateOf(inProcess, engine)}`);
      });
      engine.prefill(b);
      engine.finish(b);
    }
    for (const r of await Promise.all(bronze)) assert.match(r.body, /"content":"ok"[\s\S]*\[DONE\]/, r.body);
    assert.equal(engine.arrivals, ['b1', 'b2', 'b3', 'b4', 'p1', 'b2', 'b3', 'b4']);
    await until(() => inProcess.records.length === 5, 'five usage records');
    for (const r of inProcess.records) {
      assert.is(r.status, 200, `${r.id}: ${r.error}`);
      assert.is(r.attempts, 1, 'a recall is not a failed attempt');
    }
  } finally {
    await inProcess.close();
  }
});

test('router.admission.recall: false leaves what was sent in the engine: the first-band request waits in llmgw behind it', async () => {
  const engine = new FcfsEngine(2);
  const inProcess = await startInProcess(config(false), { a: engine.handle });
  try {
    const bronze = await overfill(inProcess, engine);
    const platinum = send(inProcess, 'p1', 'platinum', true);
    await until(() => inProcess.admissions!.get('m')!.queue.depth(0) === 1, 'platinum held: three lower-band requests wait in the engine');
    engine.finish('b1');
    engine.finish('b2');
    await until(() => engine.arrivals.includes('p1'), 'platinum sent once the engine queue is under the target');
    assert.equal(engine.cancelled, []);
    for (const b of ['b3', 'b4', 'b5', 'p1']) {
      await until(() => engine.isRunning(b), `${b} running`);
      engine.finish(b);
    }
    assert.equal(engine.started, ['b1', 'b2', 'b3', 'b4', 'b5', 'p1'], 'platinum started after every lower-band request sent before it');
    assert.is((await platinum).status, 200);
    for (const r of await Promise.all(bronze)) assert.is(r.status, 200, r.body);
    assert.is(inProcess.admissions!.get('m')!.queue.stats()[3]!.recalled, 0);
  } finally {
    await inProcess.close();
  }
});

test.run();
