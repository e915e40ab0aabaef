// Tenancy end to end with real processes: keys made by `llmgw ctl` against a real
// server, used by the official `openai` client in front of real sim engines. What a
// key may do (its models, its requests per minute, its budget) is set by ctl too, and
// a budget's spend outlives a restart of the server.

import OpenAI from 'openai';
import * as assert from 'uvu/assert';
import { writeConfig, type StartedServer } from '../support/process.js';
import { runCli } from '../support/cli.js';
import { until } from '../support/until.js';
import { suite } from '../support/uvu.js';
import type { SimProcess } from '../sim/helpers.js';
import { createKey, createTree, ctl, ctlJson, startSims, storeDir, tenancyServer, usageOf, type IssuedKey } from './e2e-fleet.js';
import { PROMPT, traffic, type Sent } from './e2e-traffic.js';

const test = suite('tenancy end to end: keys made by ctl, used by the openai client (real processes)');

let sims: Map<string, SimProcess>;
let server: StartedServer;
let dir: ReturnType<typeof storeDir>;

test.before(async () => {
  dir = storeDir();
  sims = await startSims(['m', 'other']);
  server = await tenancyServer(dir.store, sims);
  await createTree(server.admin);
});

test.after(async () => {
  await server?.stop();
  for (const s of sims?.values() ?? []) await s.stop();
  dir?.remove();
});

function client(apiKey: string): OpenAI {
  // No retries: a refusal must reach the spec as the client first saw it.
  return new OpenAI({ baseURL: `${server.url}/v1`, apiKey, maxRetries: 0 });
}

const ask = (c: OpenAI, model = 'm'): Promise<OpenAI.Chat.Completions.ChatCompletion> =>
  c.chat.completions.create({ model, messages: [{ role: 'user', content: 'Say hello.' }], max_tokens: 8 });

async function refusal(p: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  try {
    await p;
  } catch (err) {
    if (err instanceof OpenAI.APIError) return err;
    throw err;
  }
  throw new Error('the request was served, not refused');
}

test('a key made by ctl serves chat, streamed and not, with its usage', async () => {
  const k = await createKey(server.admin, 'works');
  const c = client(k.key);
  const reply = await ask(c);
  assert.ok(reply.choices[0]!.message.content!.length > 0);
  assert.ok(reply.usage!.completion_tokens > 0 && reply.usage!.completion_tokens <= 8);

  const stream = await c.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'Stream this.' }], max_tokens: 8, stream: true, stream_options: { include_usage: true } });
  let text = '';
  let usage: OpenAI.CompletionUsage | null | undefined;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta.content ?? '';
    usage = chunk.usage ?? usage;
  }
  assert.ok(text.length > 0);
  assert.ok(usage && usage.completion_tokens > 0);
});

test('a wrong, a revoked and an expired key get 401 invalid_api_key', async () => {
  const wrong = await refusal(ask(client('sk-llmgw-notakeyatall')));
  assert.instance(wrong, OpenAI.AuthenticationError);
  assert.is(wrong.code, 'invalid_api_key');

  const revoked = await createKey(server.admin, 'revoked');
  await ask(client(revoked.key));
  await ctl(server.admin, 'keys', 'revoke', revoked.id);
  const r = await refusal(ask(client(revoked.key)));
  assert.instance(r, OpenAI.AuthenticationError);
  assert.match(r.message, /revoked/);

  const expiring = await createKey(server.admin, 'expiring', '--expires-in', '1s');
  const shown = await ctlJson<{ entity: { expiresAt: number } }>(server.admin, 'keys', 'show', expiring.id);
  // Served until its expiry; then refused, which is awaited rather than slept for.
  let last: unknown;
  await until(
    async () => {
      last = await ask(client(expiring.key)).catch((err: unknown) => err);
      return last instanceof OpenAI.AuthenticationError;
    },
    'the key expiring',
    30_000,
  );
  assert.ok(Date.now() >= shown.entity.expiresAt, 'refused only once its expiry had passed');
  assert.match((last as Error).message, /expired/);
});

test('a model outside the key\'s --models is refused with 403', async () => {
  const k = await createKey(server.admin, 'only-m');
  await ctl(server.admin, 'limits', 'set', '--key', k.id, '--models', 'm');
  await ask(client(k.key), 'm');
  const err = await refusal(ask(client(k.key), 'other'));
  assert.instance(err, OpenAI.PermissionDeniedError);
  assert.match(err.message, /may not use the model 'other'/);
  // The other model itself serves: a key without the limit reaches it.
  const free: IssuedKey = await createKey(server.admin, 'any-model');
  assert.ok((await ask(client(free.key), 'other')).choices.length > 0);
});

test('the 6th request of a 5-rpm key is refused with 429, retry-after and the rate headers', async () => {
  const k = await createKey(server.admin, 'five-rpm');
  await ctl(server.admin, 'limits', 'set', '--key', k.id, '--rpm', '5');
  const c = client(k.key);
  for (let i = 0; i < 5; i++) {
    const { response } = await c.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 }).withResponse();
    assert.is(response.headers.get('x-ratelimit-limit-requests'), '5');
    assert.is(response.headers.get('x-ratelimit-remaining-requests'), String(4 - i));
  }
  const err = await refusal(ask(c));
  assert.instance(err, OpenAI.RateLimitError);
  assert.is(err.code, 'rate_limit_exceeded');
  const h = err.headers!;
  const retry = Number(h.get('retry-after'));
  assert.ok(retry >= 1 && retry <= 60, `retry-after ${h.get('retry-after')}`);
  assert.is(h.get('x-ratelimit-limit-requests'), '5');
  assert.is(h.get('x-ratelimit-remaining-requests'), '0');
  assert.match(h.get('x-ratelimit-reset-requests') ?? '', /^\d+(ms|s|m\d+s)$/);
});

// What the limit stage reserves for one request of the traffic: its prompt estimated at
// four characters a token over "role\ncontent\n\n", and its max_tokens (limit.ts).
const estimateOf = (maxTokens: number): number => Math.ceil(`user\n${PROMPT}\n\n`.length / 4) + maxTokens;

test('64 concurrent streams on a budget: some are refused insufficient_quota, and the spend overshoots by at most what was in flight beyond its reservations', async () => {
  const BUDGET = 2_000;
  const MAX_TOKENS = 32;
  const k = await createKey(server.admin, 'budgeted');
  await ctl(server.admin, 'limits', 'set', '--key', k.id, '--budget', String(BUDGET), '--period', 'day');
  const sent = await traffic({ url: server.url, key: () => k.key, total: 64, concurrency: 64, maxTokens: () => MAX_TOKENS, kind: () => 'stream' });
  const served = sent.filter((s) => s.status === 200);
  const refused = sent.filter((s) => s.status === 429);
  assert.is(served.length + refused.length, 64);
  assert.ok(refused.length > 0 && refused.every((s) => s.code === 'insufficient_quota'), `${refused.length} refused: ${refused.map((s) => s.code).join(', ')}`);
  assert.ok(served.every((s) => s.complete));

  const usage = (await usageOf(server.admin, k.id))!;
  assert.is(usage.requests, 64);
  const costs = served.map((s) => s.promptTokens + s.completionTokens);
  assert.is(usage.units, costs.reduce((a, b) => a + b, 0), 'charged what the engine reported');
  // A request is admitted while spent + reserved < budget, and reserves its estimate.
  // After the last admission the figure grows only by what requests still in flight
  // cost beyond their estimates, so the spend ends below budget + the last one's cost
  // + what each other one served cost beyond its reservation.
  const most = Math.max(...costs);
  const beyond = Math.max(0, most - estimateOf(MAX_TOKENS));
  assert.ok(usage.units >= BUDGET, `the budget was reached (${usage.units} of ${BUDGET})`);
  assert.ok(usage.units < BUDGET + most + (served.length - 1) * beyond, `spent ${usage.units}: at most ${BUDGET} + ${most} + ${served.length - 1} × ${beyond}`);
});

test('a budget partly spent before a restart is still partly spent after it', async () => {
  const BUDGET = 300;
  const MAX_TOKENS = 32;
  const k = await createKey(server.admin, 'spends-across-restarts');
  await ctl(server.admin, 'limits', 'set', '--key', k.id, '--budget', String(BUDGET), '--period', 'day');
  const before = await traffic({ url: server.url, key: () => k.key, total: 4, concurrency: 1, maxTokens: () => MAX_TOKENS, kind: () => 'json' });
  assert.ok(before.every((s) => s.status === 200));
  const spent = (await usageOf(server.admin, k.id))!.units;
  assert.ok(spent > BUDGET / 3 && spent < BUDGET, `partly spent: ${spent} of ${BUDGET}`);

  await server.stop();
  server = await tenancyServer(dir.store, sims);

  // One at a time, so that nothing is reserved when each arrives: served while the day's
  // spend is below the budget, refused from the first one that finds it spent.
  let refused: Sent | undefined;
  const after = await traffic({
    url: server.url,
    key: () => k.key,
    total: 20,
    concurrency: 1,
    maxTokens: () => MAX_TOKENS,
    kind: () => 'json',
    stopped: () => refused !== undefined,
    onEnd: (s) => {
      if (s.status !== 200) refused = s;
    },
  });
  assert.is(refused?.code, 'insufficient_quota');
  const costs = after.filter((s) => s.status === 200).map((s) => s.promptTokens + s.completionTokens);
  const total = costs.reduce((a, b) => a + b, spent);
  // Had the restart forgotten the spend, the served ones alone would have reached the budget.
  assert.ok(total >= BUDGET, `spent ${total} when refused`);
  assert.ok(total - costs.at(-1)! < BUDGET, `the last one served found ${total - costs.at(-1)!} spent, below ${BUDGET}`);
});

test('a store that cannot be opened stops the server at start, saying which file and why', async () => {
  // Its folder would have to be made inside a file.
  const config = writeConfig(`listen: "127.0.0.1:0"
admin_listen: "127.0.0.1:0"
models: [{ name: m }]
endpoints: [{ id: e, url: "${sims.get('m')!.url}", models: [m] }]
tenancy: { store: "${process.execPath}/llmgw.db" }
`);
  const r = await runCli(['run', '--role=server', '--config', config]);
  assert.is(r.code, 2, r.stderr);
  assert.match(r.stderr, new RegExp(`cannot open the tenancy store ${process.execPath}/llmgw.db`));
});

test.run();
