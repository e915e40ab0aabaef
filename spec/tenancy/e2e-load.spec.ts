// Tenancy's accounting under load, end to end: thousands of requests on keys made by
// ctl (streamed, not streamed, and streams left by their clients mid-way), then what
// `ctl usage` charged against what the engine itself counted on its /metrics.
//
// SPEC_TENANCY_REQUESTS sets how many: 10,000 by default (~30 s on a quiet 2-core
// machine, ~60 s on a loaded one); fewer for a quick run.

import * as assert from 'uvu/assert';
import type { StartedServer } from '../support/process.js';
import { suite } from '../support/uvu.js';
import { metric, type SimProcess } from '../sim/helpers.js';
import { createKey, createTree, startSims, storeDir, tenancyServer, usageOf } from './e2e-fleet.js';
import { traffic, type Kind, type Sent } from './e2e-traffic.js';

const test = suite('tenancy end to end: usage under load matches the engine\'s counters (real processes)');

const TOTAL = Number(process.env.SPEC_TENANCY_REQUESTS ?? 10_000);
const MAX_TOKENS = 12;
// Long enough that a client leaving after two events leaves while the engine still runs.
const LEAVING_MAX_TOKENS = 64;

let sims: Map<string, SimProcess>;
let server: StartedServer;
let dir: ReturnType<typeof storeDir>;

test.before(async () => {
  dir = storeDir();
  sims = await startSims(['m'], 100);
  server = await tenancyServer(dir.store, sims);
  await createTree(server.admin);
});

test.after(async () => {
  await server?.stop();
  for (const s of sims?.values() ?? []) await s.stop();
  dir?.remove();
});

// Mixed in a fixed pattern: every tenth request is a stream its client leaves.
const kindOf = (i: number): Kind => (i % 10 === 9 ? 'abort' : i % 2 === 0 ? 'json' : 'stream');

test(`${TOTAL} requests: ctl usage counts every one, the engine's tokens for each that completed, and for streams left mid-way at least what reached the client`, async () => {
  // The streams their clients leave present a key of their own, so each key's usage is known apart.
  const whole = await createKey(server.admin, 'whole');
  const leaving = await createKey(server.admin, 'leaving');
  const started = Date.now();
  const sent = await traffic({ url: server.url, key: (kind) => (kind === 'abort' ? leaving.key : whole.key), total: TOTAL, concurrency: 32, maxTokens: (kind) => (kind === 'abort' ? LEAVING_MAX_TOKENS : MAX_TOKENS), kind: kindOf, abortAfter: 2 });
  const seconds = (Date.now() - started) / 1000;
  assert.is(sent.length, TOTAL);
  assert.equal(sent.filter((s) => s.status !== 200).slice(0, 3), [], 'every request was answered 200');
  const [wholeSent, leavingSent] = [sent.filter((s) => s.kind !== 'abort'), sent.filter((s) => s.kind === 'abort')];
  assert.ok(wholeSent.every((s) => s.complete), 'every request not left by its client completed');
  const left = leavingSent.filter((s) => !s.complete);
  assert.ok(left.length > leavingSent.length / 2, `most clients that meant to leave left (${left.length} of ${leavingSent.length})`);

  const engineUrl = sims.get('m')!.url;
  const engine = { prompt: await metric(engineUrl, 'vllm:prompt_tokens_total'), completion: await metric(engineUrl, 'vllm:generation_tokens_total') };
  const u = { whole: (await usageOf(server.admin, whole.id))!, leaving: (await usageOf(server.admin, leaving.id))! };
  const sum = (xs: readonly Sent[], f: 'promptTokens' | 'completionTokens' | 'tokens' | 'events'): number => xs.reduce((a, x) => a + x[f], 0);
  const finished = leavingSent.filter((s) => s.complete);
  // What the streams left mid-way were charged, and what the engine ran for them.
  const charged = { prompt: u.leaving.promptTokens - sum(finished, 'promptTokens'), completion: u.leaving.completionTokens - sum(finished, 'completionTokens') };
  const ran = { prompt: engine.prompt - u.whole.promptTokens - sum(finished, 'promptTokens'), completion: engine.completion - u.whole.completionTokens - sum(finished, 'completionTokens') };
  const received = { events: sum(left, 'events'), tokens: sum(left, 'tokens') };
  console.log(
    `  ${TOTAL} requests in ${seconds.toFixed(1)} s; ${left.length} streams left mid-way were charged ${charged.completion} completion and ${charged.prompt} prompt tokens;` +
      ` the engine ran ${ran.completion} and ${ran.prompt} for them; their clients received ${received.tokens} tokens in ${received.events} events`,
  );

  assert.is(u.whole.requests + u.leaving.requests, TOTAL, 'every request is counted once');
  assert.is(u.leaving.requests, leavingSent.length);
  assert.is(u.whole.errors, 0);
  // Every answer that completed is charged the engine's own usage, which its client saw.
  assert.is(u.whole.promptTokens, sum(wholeSent, 'promptTokens'));
  assert.is(u.whole.completionTokens, sum(wholeSent, 'completionTokens'));
  // The sim answers past max_tokens (its natural answers are longer), so each complete answer is exactly MAX_TOKENS.
  assert.is(u.whole.completionTokens, wholeSent.length * MAX_TOKENS);
  // The engine prefilled the same prompt once for every request: each reached its first token.
  const prompt = wholeSent[0]!.promptTokens;
  assert.is(engine.prompt, prompt * TOTAL, 'the engine ran every request');
  // A stream left mid-way is charged at least what reached its client, never more than the engine ran.
  assert.ok(charged.completion >= received.tokens, `charged ${charged.completion} ≥ received ${received.tokens}`);
  assert.ok(charged.completion <= ran.completion, `charged ${charged.completion} ≤ engine ${ran.completion}`);
});

test.run();
