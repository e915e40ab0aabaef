// Admission control end to end: a real server in front of a real simulated engine that
// runs two sequences at a time, flooded with bronze requests. Its batch size is
// configured: a learnt one is probed upwards now and then, and these specs count on the
// slots bronze may fill. Learning is specified in the endpoint table's and admission's specs.

import { suite } from '../../support/uvu.js';
import * as assert from 'uvu/assert';
import { request } from 'undici';
import type { BandStats } from '../../../src/messages/admission.js';
import { runCli } from '../../support/cli.js';
import { startProcess, startServer, writeConfig, type Started } from '../../support/process.js';
import { until } from '../../support/until.js';

const test = suite('admission e2e: bands, queueing, shedding, timeouts (real processes)');

let sim: Started;
let server: Started;
let open: Started;
let url: string;
let admin: string;
let openUrl: string;
let openAdmin: string;

async function bands(base = admin): Promise<Map<string, BandStats>> {
  const body = (await (await request(`${base}/admin/v1/admission`)).body.json()) as { models: { model: string; bands: BandStats[] }[] };
  return new Map(body.models.find((m) => m.model === 'm')!.bands.map((b) => [b.band, b]));
}
async function usage(base = admin): Promise<{ id: string; band: string | null; status: number; queueMs: number; error: string | null }[]> {
  return ((await (await request(`${base}/admin/v1/usage?limit=1000`)).body.json()) as { recent: never[] }).recent;
}

/**
 * Waits until the engine holds nothing: requests an earlier test cancelled still free
 * their slots for a while, and a slot freed mid-test releases what a test means to keep queued.
 */
async function engineIdle(): Promise<void> {
  await until(async () => {
    const text = await (await request(`${sim.match[1]}/metrics`)).body.text();
    const gauge = (name: string): number => Number(new RegExp(`^vllm:${name}\\{[^}]*\\} (\\S+)$`, 'm').exec(text)?.[1]);
    return gauge('num_requests_running') === 0 && gauge('num_requests_waiting') === 0;
  }, 'the engine idle');
}

interface Reply {
  status: number;
  body: string;
  retryAfter: string | undefined;
  doneAt: number;
}
function send(headers: Record<string, string>, maxTokens: number, base = url, signal?: AbortSignal): Promise<Reply> {
  return request(`${base}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model: 'm', prompt: 'tell me more', max_tokens: maxTokens }),
    ...(signal ? { signal } : {}),
  }).then(async (r) => ({ status: r.statusCode, body: await r.body.text(), retryAfter: r.headers['retry-after'] as string | undefined, doneAt: performance.now() }));
}
const bronze = (n: number, maxTokens = 150): Promise<Reply>[] => Array.from({ length: n }, () => send({ 'x-llmgw-priority': 'bronze' }, maxTokens));

/**
 * Once the engine is idle, four bronze requests too long to finish during a test (`stop`
 * cancels them); resolves once one of them holds the batch slot bronze may use and the
 * rest queue. Queued alone is not enough: the router's last scrape may still show the
 * requests the previous test cancelled, so the whole flood queues in front of an idle
 * engine until a scrape shows it free, and a higher band arriving then takes the slot.
 */
async function bronzeFlood(): Promise<{ stop: AbortController; flood: Promise<Reply | Error>[] }> {
  await engineIdle();
  const admitted = (await bands()).get('bronze')!.admitted;
  const stop = new AbortController();
  const flood = Array.from({ length: 4 }, () => send({ 'x-llmgw-priority': 'bronze' }, 5_000, url, stop.signal).catch((e: Error) => e));
  await until(async () => {
    const b = (await bands()).get('bronze')!;
    return b.admitted > admitted && b.queued >= 2;
  }, 'saturated by the flood');
  return { stop, flood };
}

function config(admission: string): string {
  const path = writeConfig(
    `listen: "127.0.0.1:0"
admin_listen: "127.0.0.1:0"
log_level: error
router:
  poll_interval_ms: 25
  profiles:
    - name: nightly
      scorers: { inflight: 1 }
      band: bronze
  admission:
${admission}
models:
  - name: m
endpoints:
  - { id: e, url: "${sim.match[1]}", models: [m], max_num_seqs: 2 }
`,
  );
  return path;
}

test.before(async () => {
  sim = await startProcess(['run', '--role=sim', '--listen', '127.0.0.1:0', '--model', 'm', '--speed', '2', '--max-num-seqs', '2'], { waitFor: /listening on (http:\S+)/ });
  const on = config(`    priority_header: true
    target_waiting_per_replica: 1
    max_queued: 14
    bands:
      - { name: platinum }
      - { name: gold, queue_timeout_ms: 150 }
      - { name: silver }
      - { name: bronze }`);
  const off = config('    enabled: false');
  [server, open] = await Promise.all([
    startServer(on),
    startServer(off),
  ]);
  [url, admin] = [server.match[1]!, server.match[2]!];
  [openUrl, openAdmin] = [open.match[1]!, open.match[2]!];
});

test.after(async () => {
  await Promise.all([server?.stop(), open?.stop(), sim?.stop()]);
});

test('band: the routing profile first, then the priority header, then the default; an unknown band is a 400', async () => {
  const replies = await Promise.all([
    send({ 'x-llmgw-profile': 'nightly', 'x-llmgw-priority': 'platinum', 'x-request-id': 'by-profile' }, 1),
    send({ 'x-llmgw-priority': 'platinum', 'x-request-id': 'by-header' }, 1),
    send({ 'x-request-id': 'by-default' }, 1),
    send({ 'x-llmgw-priority': 'diamond', 'x-request-id': 'unknown' }, 1),
  ]);
  assert.equal(replies.map((r) => r.status), [200, 200, 200, 400]);
  assert.match(replies[3]!.body, /x-llmgw-priority: 'diamond' is not a band; have: platinum, gold, silver, bronze/);
  await until(async () => (await usage()).filter((u) => u.id.startsWith('by-')).length === 3, 'usage records');
  const byId = new Map((await usage()).map((u) => [u.id, u.band]));
  assert.equal([byId.get('by-profile'), byId.get('by-header'), byId.get('by-default')], ['bronze', 'platinum', 'silver']);
});

test('under a bronze flood, platinum jumps the queue; when the flood stops every queued bronze request completes', async () => {
  const flood = bronze(12);
  await until(async () => (await bands()).get('bronze')!.queued >= 6, 'bronze queueing');
  const queuedAhead = (await bands()).get('bronze')!.queued;
  const platinum = await send({ 'x-llmgw-priority': 'platinum' }, 5);
  assert.is(platinum.status, 200);
  const done = await Promise.all(flood);
  for (const r of done) assert.is(r.status, 200, r.body);
  const after = done.filter((r) => r.doneAt > platinum.doneAt).length;
  assert.ok(after >= queuedAhead - 2, `${after} of ${queuedAhead} queued bronze requests finished after the platinum one`);
  const b = await bands();
  assert.is(b.get('bronze')!.queued, 0, 'none left waiting while capacity is free');
});

test('a full room sheds the lowest band first, with 429 and Retry-After, and each shed request leaves its usage record', async () => {
  const flood = Array.from({ length: 18 }, (_, i) => send({ 'x-llmgw-priority': 'bronze', 'x-request-id': `flood-${i}` }, 150));
  await until(async () => (await bands()).get('bronze')!.queued >= 14, 'the room full of bronze');
  // Three at once: a bronze release in between may give one of them a free place, not all three.
  const silver = [0, 1, 2].map(() => send({ 'x-llmgw-priority': 'silver' }, 1));
  const replies = await Promise.all(flood);
  const shed = replies.filter((r) => r.status === 429);
  assert.ok(shed.length >= 1, 'bronze was shed');
  assert.is(shed[0]!.retryAfter, '1');
  const err = JSON.parse(shed[shed.length - 1]!.body) as { error: { message: string; type: string } };
  assert.is(err.error.type, 'rate_limit_error');
  assert.ok(replies.some((r) => /shed to make room for a silver request/.test(r.body)), 'one made way for the silver request');
  for (const r of await Promise.all(silver)) assert.is(r.status, 200);
  const ids = replies.flatMap((r, i) => (r.status === 429 ? [`flood-${i}`] : []));
  await until(async () => (await usage()).filter((u) => u.id.startsWith('flood-')).length === 18, 'a usage record for every bronze request');
  const records = new Map((await usage()).map((u) => [u.id, u]));
  for (const id of ids) {
    const u = records.get(id)!;
    assert.equal([u.status, u.error, u.band], [429, 'LLMGW_QUEUE_FULL', 'bronze'], id);
  }
});

test('a request that waits past its band timeout gets a 503 with Retry-After, and leaves its usage record', async () => {
  const { stop, flood } = await bronzeFlood();
  try {
    const gold = await send({ 'x-llmgw-priority': 'gold', 'x-request-id': 'gold-timeout' }, 1);
    assert.is(gold.status, 503, gold.body);
    assert.match(gold.body, /waited \d+ ms for capacity on 'm' \(gold band limit 150 ms\)/);
    assert.is(gold.retryAfter, '1');
    assert.is((await bands()).get('gold')!.timedOut, 1);
    await until(async () => (await usage()).some((u) => u.id === 'gold-timeout'), 'the timed-out request\'s usage record');
    const u = (await usage()).find((r) => r.id === 'gold-timeout')!;
    assert.equal([u.status, u.error, u.band], [503, 'LLMGW_QUEUE_TIMEOUT', 'gold']);
    assert.ok(u.queueMs >= 149, `waited ${u.queueMs} ms`); // 150 by a wall clock of whole milliseconds
  } finally {
    stop.abort(); // whatever failed, the flood must not reach the next test
    await Promise.all(flood);
  }
  await until(async () => (await bands()).get('bronze')!.queued === 0, 'the flood gone');
});

test('a client that disconnects while queued leaves the queue at once', async () => {
  // Requests too long to finish during the test: nothing is released while it looks.
  const { stop, flood } = await bronzeFlood();
  const before = (await bands()).get('silver')!;
  const ac = new AbortController();
  const leaving = send({ 'x-llmgw-priority': 'silver' }, 1, url, ac.signal).catch((e: Error) => e);
  await until(async () => (await bands()).get('silver')!.queued === before.queued + 1, 'queued');
  // What an operator sees meanwhile: the queue, its oldest wait, and why each band waits.
  const ctl = await runCli(['ctl', 'admission', '--admin', admin]);
  assert.is(ctl.code, 0, ctl.stderr);
  assert.match(ctl.stdout, /^MODEL\s+BAND\s+QUEUED\s+OLDEST\s+ADMITTED/);
  assert.match(ctl.stdout, /\nm\s+platinum\s+0\s+-\s+\d+\s+0\s+0\s+0\s+0\s*\n/, `platinum would go at once (the reserved slot):\n${ctl.stdout}`);
  assert.match(ctl.stdout, /\nm\s+gold\s+0\s+-\s+.*no free batch slot on 1 replicas beyond the reserved ones/, ctl.stdout);
  assert.match(ctl.stdout, /\nm\s+silver\s+1\s+\d+\.\ds\s+\d+\s+0\s+0\s+\d+\s+\d+\s+requests of its band or above are queued ahead/, ctl.stdout);
  assert.match(ctl.stdout, /\nm\s+bronze\s+[2-9]\s+\d+\.\ds\s/, ctl.stdout);
  assert.match(ctl.stdout, /\nm: lower bands keep at most \d+ in flight per replica of unknown batch size/, ctl.stdout);
  ac.abort();
  await leaving;
  await until(async () => {
    const s = (await bands()).get('silver')!;
    return s.queued === before.queued && s.cancelled === before.cancelled + 1;
  }, 'left the queue');
  stop.abort();
  await Promise.all(flood);
  await until(async () => (await bands()).get('bronze')!.queued === 0, 'the flood gone too');
});

test('admission disabled is a pass-through: everything goes to the engine at once, which queues it', async () => {
  const status = (await (await request(`${openAdmin}/admin/v1/admission`)).body.json()) as { enabled: boolean };
  assert.is(status.enabled, false);
  const flood = Array.from({ length: 8 }, () => send({ 'x-llmgw-priority': 'bronze' }, 150, openUrl));
  await until(async () => {
    const text = await (await request(`${sim.match[1]}/metrics`)).body.text();
    return Number(/^vllm:num_requests_waiting\{[^}]*\} (\S+)$/m.exec(text)?.[1]) >= 5;
  }, 'the engine queueing the flood itself');
  for (const r of await Promise.all(flood)) assert.is(r.status, 200);
  // Records reach the accounting thread in batches after the answers: wait for all of them.
  let records: Awaited<ReturnType<typeof usage>> = [];
  await until(async () => (records = await usage(openAdmin)).length >= 8, "the flood's usage records");
  assert.ok(records.every((u) => u.band === null && u.queueMs === 0));
});

test.run();
