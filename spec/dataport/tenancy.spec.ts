// Tenancy on the request path, with real sockets and a simulated engine: the key's
// 401s, 403 and 429s, the budget fallback, the key's band, and billing — every request
// one journal line, written before the last byte of an answer that was served.

import { mkdirSync, rmSync } from 'node:fs';
import { request } from 'undici';
import * as assert from 'uvu/assert';
import type { BilledRecord, TenancySnapshot } from '../../src/messages/tenancy.js';
import { SEGMENT_BYTES } from '../../src/tenancy/journal-segments.js';
import { keyRecord, limitRow, oneProject } from '../tenancy/fixtures.js';
import { until } from '../support/until.js';
import { suite } from '../support/uvu.js';
import { startTenancyPort, type TenancyPort } from './tenancy-port.js';

const test = suite('tenancy on the request path (sim engine, real sockets)');

const yaml = (tenancy: string): string => `
listen: "127.0.0.1:0"
router: { max_body_bytes: 20000000, admission: { priority_header: true } }
models:
  - { name: m, aliases: [em] }
  - { name: n }
endpoints:
  - { id: a, url: "http://127.0.0.1:1", models: [m] }
  - { id: b, url: "http://127.0.0.1:1", models: [n] }
tenancy: ${tenancy}
`;

function snapshot(): TenancySnapshot {
  const s = oneProject(['ok', 'only-m', 'rpm', 'budget', 'band', 'hard', 'hard-whole']);
  s.keys.push(keyRecord('revoked', 'proj_a', 'sk-llmgw-revoked', { revokedAt: 1 }), keyRecord('expired', 'proj_a', 'sk-llmgw-expired', { expiresAt: 1 }));
  s.limits = [
    limitRow('key', 'only-m', { models: ['m'] }),
    limitRow('key', 'rpm', { rpm: 5 }),
    limitRow('key', 'budget', { budget: 1, period: 'day' }),
    limitRow('key', 'band', { band: 'bronze' }),
    limitRow('key', 'hard', { budget: 30, period: 'day' }),
    limitRow('key', 'hard-whole', { budget: 30, period: 'day' }),
  ];
  return s;
}

let port: TenancyPort;
let strict: TenancyPort;
/** Hard budgets: a response is stopped once its budget runs out. */
let hard: TenancyPort;

test.before(async () => {
  port = await startTenancyPort(yaml('{ store: t.db, budget_fallback: n }'), snapshot(), 2);
  strict = await startTenancyPort(yaml('{ store: t.db }'), snapshot(), 2);
  hard = await startTenancyPort(yaml('{ store: t.db, hard_budgets: true }'), snapshot(), 2);
});

test.after(async () => {
  await Promise.all([port?.close(), strict?.close(), hard?.close()]);
});

let seq = 0;
async function chat(on: TenancyPort, key: string | null, body: Record<string, unknown> = {}, id = `req-${++seq}`) {
  const headers: Record<string, string> = { 'content-type': 'application/json', 'x-request-id': id };
  if (key !== null) headers.authorization = `Bearer ${key}`;
  const res = await request(`${on.url}/v1/chat/completions`, { method: 'POST', headers, body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi there' }], max_tokens: 4, ...body }) });
  const text = await res.body.text();
  return { id, status: res.statusCode, headers: res.headers, text, json: () => JSON.parse(text) as { error: { code: string; type: string; message: string } } };
}

const lineOf = (on: TenancyPort, id: string): BilledRecord | undefined => on.journal().find((r) => r.id === id);

test('401 for a missing, unknown, revoked or expired key, with its reason, before the body is read; each journaled unbilled', async () => {
  for (const [key, why] of [
    [null, /no API key/],
    ['sk-llmgw-nope', /not valid/],
    ['sk-llmgw-revoked', /revoked/],
    ['sk-llmgw-expired', /expired/],
  ] as const) {
    const r = await chat(port, key);
    assert.is(r.status, 401);
    assert.is(r.json().error.code, 'invalid_api_key');
    assert.match(r.json().error.message, why);
    const line = lineOf(port, r.id)!;
    assert.equal([line.status, line.keyId, line.orgId, line.units], [401, null, null, 0]);
    assert.is(line.modelAsked, '', 'refused before its body was read');
  }
});

test('a working key is served and billed to its chain in tokens, its line journaled before the last byte', async () => {
  const r = await chat(port, 'sk-llmgw-ok');
  assert.is(r.status, 200);
  const line = lineOf(port, r.id)!;
  assert.equal([line.keyId, line.projectId, line.teamId, line.orgId], ['ok', 'proj_a', 'team_a', 'org_a']);
  assert.ok(line.promptTokens > 0 && line.completionTokens === 4);
  assert.is(line.units, line.promptTokens + line.completionTokens);
  assert.is(port.journaledAtEnd.get(r.id), true);
});

test('a stream is journaled before its last byte too, and each request has exactly one line', async () => {
  const r = await chat(port, 'sk-llmgw-ok', { stream: true });
  assert.match(r.text, /data: \[DONE\]/);
  assert.is(port.journaledAtEnd.get(r.id), true);
  assert.is(port.journal().filter((l) => l.id === r.id).length, 1);
  assert.is(lineOf(port, r.id)!.completionTokens, 4, "the engine's own usage");
});

test('403 for a model the key may not use, by name or alias alike', async () => {
  assert.is((await chat(port, 'sk-llmgw-only-m', { model: 'em' })).status, 200);
  const r = await chat(port, 'sk-llmgw-only-m', { model: 'n' });
  assert.is(r.status, 403);
  assert.is(r.json().error.code, 'model_not_allowed');
  assert.is(lineOf(port, r.id)!.error, 'LLMGW_MODEL_NOT_ALLOWED');
});

test('the 6th request of a 5-rpm key is refused 429 with Retry-After and the rate-limit headers', async () => {
  for (let i = 0; i < 5; i++) {
    const ok = await chat(port, 'sk-llmgw-rpm');
    assert.is(ok.status, 200);
    assert.is(ok.headers['x-ratelimit-limit-requests'], '5');
    assert.is(ok.headers['x-ratelimit-remaining-requests'], String(4 - i));
  }
  const r = await chat(port, 'sk-llmgw-rpm');
  assert.is(r.status, 429);
  assert.is(r.json().error.code, 'rate_limit_exceeded');
  assert.is(r.json().error.type, 'rate_limit_error');
  const wait = Number(r.headers['retry-after']);
  assert.ok(wait >= 1 && wait <= 12, `retry-after ${String(r.headers['retry-after'])}`);
  assert.is(r.headers['x-ratelimit-remaining-requests'], '0');
  assert.match(String(r.headers['x-ratelimit-reset-requests']), /^(\d+m)?\d+s$/);
});

test('a spent budget sends the key to the fallback model, free', async () => {
  const first = await chat(port, 'sk-llmgw-budget');
  assert.is(first.status, 200);
  assert.is(lineOf(port, first.id)!.modelServed, 'm');
  assert.ok(lineOf(port, first.id)!.units > 1, 'the budget is spent by this one');
  const second = await chat(port, 'sk-llmgw-budget');
  assert.is(second.status, 200);
  const line = lineOf(port, second.id)!;
  assert.equal([line.modelAsked, line.modelServed, line.units], ['m', 'n', 0]);
});

test('without a fallback, a spent budget is 429 insufficient_quota', async () => {
  assert.is((await chat(strict, 'sk-llmgw-budget')).status, 200);
  const r = await chat(strict, 'sk-llmgw-budget');
  assert.is(r.status, 429);
  assert.is(r.json().error.code, 'insufficient_quota');
  assert.is(r.json().error.type, 'insufficient_quota');
});

test("the key's band is the band admission sees, over the client's header", async () => {
  const asking = async (key: string): Promise<string | null> => {
    const id = `band-${++seq}`;
    const res = await request(`${port.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': id, authorization: `Bearer ${key}`, 'x-llmgw-priority': 'platinum' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }),
    });
    await res.body.dump();
    return lineOf(port, id)!.band;
  };
  assert.is(await asking('sk-llmgw-band'), 'bronze');
  assert.is(await asking('sk-llmgw-ok'), 'platinum', "the header's band where the key sets none");
  const plain = await chat(port, 'sk-llmgw-ok');
  assert.is(lineOf(port, plain.id)!.band, 'silver', 'the default band otherwise');
});

test('a client that leaves a stream half-way is charged for what it was sent', async () => {
  const id = `abort-${++seq}`;
  const res = await request(`${port.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-request-id': id, authorization: 'Bearer sk-llmgw-ok' },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'tell me a long story' }], max_tokens: 400, stream: true }),
  });
  let seen = '';
  for await (const chunk of res.body) {
    seen += String(chunk);
    if ((seen.match(/\n\n/g) ?? []).length >= 4) break; // leaves: the body is destroyed
  }
  await until(() => lineOf(port, id) !== undefined, 'the aborted stream is journaled');
  const line = lineOf(port, id)!;
  assert.is(line.status, 499);
  assert.ok(line.usageEstimated);
  assert.ok(line.completionTokens >= 3 && line.completionTokens < 400, `charged ${line.completionTokens} completion tokens`);
  assert.is(line.units, line.promptTokens + line.completionTokens);
});

test('with hard budgets, a stream whose budget runs out mid-way ends with an error event and [DONE]', async () => {
  const r = await chat(hard, 'sk-llmgw-hard', { stream: true, max_tokens: 200 });
  assert.is(r.status, 200);
  const events = r.text.split('\n\n').filter((e) => e.startsWith('data: '));
  assert.is(events.at(-1), 'data: [DONE]');
  const error = JSON.parse(events.at(-2)!.slice('data: '.length)) as { error: { code: string } };
  assert.is(error.error.code, 'insufficient_quota');
  const line = lineOf(hard, r.id)!;
  assert.is(line.error, 'LLMGW_BUDGET_EXCEEDED');
  assert.ok(line.completionTokens < 200, `cut after ${line.completionTokens} tokens`);
});

test('with hard budgets, an answer asked for whole stops when its budget runs out: a 429, charged for what was generated', async () => {
  const r = await chat(hard, 'sk-llmgw-hard-whole', { max_tokens: 200 });
  assert.is(r.status, 429, r.text);
  assert.is(r.json().error.code, 'insufficient_quota');
  assert.match(r.json().error.message, /ran out during this response/);
  const line = lineOf(hard, r.id)!;
  assert.is(line.error, 'LLMGW_BUDGET_EXCEEDED');
  assert.ok(line.usageEstimated);
  assert.ok(line.completionTokens > 0 && line.completionTokens < 200, `stopped after ${line.completionTokens} tokens`);
  assert.is(line.units, line.promptTokens + line.completionTokens);
});

test('/v1/models needs a key and lists only the models it may use', async () => {
  const none = await request(`${port.url}/v1/models`);
  assert.is(none.statusCode, 401);
  await none.body.dump();
  const all = (await (await request(`${port.url}/v1/models`, { headers: { authorization: 'Bearer sk-llmgw-ok' } })).body.json()) as { data: { id: string }[] };
  assert.equal(all.data.map((d) => d.id).sort(), ['em', 'm', 'n']);
  const some = (await (await request(`${port.url}/v1/models`, { headers: { authorization: 'Bearer sk-llmgw-only-m' } })).body.json()) as { data: { id: string }[] };
  assert.equal(some.data.map((d) => d.id).sort(), ['em', 'm']);
  const hidden = await request(`${port.url}/v1/models/n`, { headers: { authorization: 'Bearer sk-llmgw-only-m' } });
  assert.is(hidden.statusCode, 404);
  await hidden.body.dump();
});

test('while the journal cannot be written, requests are refused 503 until a write succeeds again', async () => {
  // A record too large for the open segment needs a new one, in a folder that is gone.
  rmSync(strict.journalDir, { recursive: true });
  const huge = await chat(strict, 'sk-llmgw-ok', { model: 'x'.repeat(SEGMENT_BYTES) });
  assert.is(huge.status, 404);
  const refused = await chat(strict, 'sk-llmgw-ok');
  assert.is(refused.status, 503);
  assert.is(refused.json().error.code, 'usage_unavailable');
  mkdirSync(strict.journalDir);
  // This refusal's own line is the write that succeeds.
  assert.is((await chat(strict, 'sk-llmgw-ok')).status, 503);
  assert.is((await chat(strict, 'sk-llmgw-ok')).status, 200);
});

test.run();
