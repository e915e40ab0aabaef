// The request path against real engine processes: what the usage record, the metrics
// and the client see when an engine refuses a request, when a client leaves a stream
// half-way, and when clients send model names nobody serves; and that an answer wanted
// whole, collected from the engine's stream, is the engine's own answer.

import { request } from 'undici';
import * as assert from 'uvu/assert';
import { startProcess, startServer, writeConfig, type Started } from '../support/process.js';
import { until } from '../support/until.js';
import { suite } from '../support/uvu.js';

const test = suite('request path e2e: engine errors, aborted streams, bounded labels (real processes)');

const SIM_LINE = /listening on (http:\S+)/;
let sim: Started;
let server: Started;
/** A second server with a short first-token limit, in front of the same engine. */
let strict: Started;
let url: string;
let admin: string;

interface Record_ {
  id: string;
  status: number;
  error: string | null;
  promptTokens: number;
  completionTokens: number;
  usageEstimated: boolean;
}

async function record(id: string): Promise<Record_> {
  let found: Record_ | undefined;
  await until(async () => {
    const usage = (await (await request(`${admin}/admin/v1/usage?limit=50`)).body.json()) as { recent: Record_[] };
    found = usage.recent.find((r) => r.id === id);
    return found !== undefined;
  }, `the usage record of ${id}`);
  return found!;
}

test.before(async () => {
  // Slow enough that a stream of 400 tokens is still running when the client leaves.
  sim = await startProcess(['run', '--role=sim', '--listen', '127.0.0.1:0', '--model', 'm', '--speed', '2', '--max-model-len', '256'], { waitFor: SIM_LINE });
  const config = writeConfig(
    `listen: "127.0.0.1:0"
admin_listen: "127.0.0.1:0"
log_level: error
router: { poll_interval_ms: 100 }
models:
  - { name: m, aliases: [em] }
endpoints:
  - { id: a, url: "${sim.match[1]}", models: [m] }
`,
  );
  server = await startServer(config);
  url = server.match[1]!;
  admin = server.match[2]!;
  strict = await startServer(
    writeConfig(
      `listen: "127.0.0.1:0"
admin_listen: "127.0.0.1:0"
log_level: error
router: { poll_interval_ms: 100, first_token_timeout_ms: 400 }
models: [{ name: m }]
endpoints: [{ id: a, url: "${sim.match[1]}", models: [m] }]
`,
    ),
  );
});

test.after(async () => {
  await Promise.all([server?.stop(), strict?.stop(), sim?.stop()]);
});

const post = async (base: string, path: string, body: object): Promise<{ status: number; body: Record<string, unknown> }> => {
  const res = await request(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
};

test("an answer wanted whole, collected from the engine's stream, is the answer the engine sends whole", async () => {
  const cases: [string, object][] = [
    ['/v1/chat/completions', { model: 'm', messages: [{ role: 'user', content: 'Name three rivers.' }], max_tokens: 40, n: 2, seed: 7 }],
    ['/v1/completions', { model: 'm', prompt: ['Once upon a time', 'The river'], max_tokens: 30, seed: 3 }],
  ];
  for (const [path, body] of cases) {
    const direct = await post(sim.match[1]!, path, body);
    const through = await post(url, path, body);
    assert.is(through.status, 200);
    const same = (b: Record<string, unknown>): unknown => ({ ...b, id: undefined, created: undefined });
    const direct_ = same(direct.body) as { choices: { message?: Record<string, unknown> }[] };
    // The sim's message has vLLM's `reasoning_content: null`, a field the stream never carries.
    for (const c of direct_.choices) if (c.message) delete c.message.reasoning_content;
    const through_ = same(through.body) as Record<string, unknown>;
    // As vLLM, the sim sends `prompt_logprobs` only in an answer sent whole.
    delete (direct_ as Record<string, unknown>).prompt_logprobs;
    for (const c of direct_.choices as Record<string, unknown>[]) delete c.prompt_logprobs;
    assert.equal(through_, direct_, path);
  }
});

test('an answer wanted whole may take longer than the first-token limit: only its first token is timed', async () => {
  const t0 = performance.now();
  const r = await post(strict.match[1]!, '/v1/completions', { model: 'm', prompt: 'Tell me a long story.', max_tokens: 240 });
  const took = performance.now() - t0;
  assert.is(r.status, 200, JSON.stringify(r.body).slice(0, 200));
  assert.ok(took > 400, `the answer took ${took.toFixed(0)} ms, past the 400 ms limit`);
});

test("an engine's own error reaches the client in the OpenAI shape with a string code, its message kept", async () => {
  const res = await request(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-request-id': 'too-long' },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'word '.repeat(600) }], max_tokens: 4 }),
  });
  const body = (await res.body.json()) as { error: { message: string; type: string; param: unknown; code: unknown } };
  assert.is(res.statusCode, 400);
  assert.is(res.headers['x-llmgw-endpoint'], 'a');
  assert.is(body.error.type, 'invalid_request_error');
  assert.is(body.error.code, 'context_length_exceeded');
  assert.is(body.error.param, 'messages');
  assert.match(body.error.message, /maximum context length is 256 tokens/, "the engine's words");
  assert.equal(Object.keys(body), ['error'], 'nothing of the engine shape is left (object, type BadRequestError, integer code)');
  const r = await record('too-long');
  assert.is(r.status, 400);
  assert.is(r.error, 'context_length_exceeded');
});

test('a client that leaves a stream half-way is charged for the tokens it was sent, marked as estimated', async () => {
  const controller = new AbortController();
  const res = await request(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-request-id': 'left-early' },
    body: JSON.stringify({ model: 'm', prompt: 'Tell me a long story about a lighthouse keeper.', max_tokens: 200, stream: true }),
    signal: controller.signal,
  });
  assert.is(res.statusCode, 200);
  let events = 0;
  let text = '';
  try {
    for await (const chunk of res.body) {
      text += (chunk as Buffer).toString('utf8');
      events = text.split('\n\n').length - 1;
      if (events >= 20) controller.abort();
    }
  } catch {
    // the abort
  }
  assert.ok(events >= 20, `read ${events} events`);
  assert.not.match(text, /\[DONE\]/, 'left before the end');
  const r = await record('left-early');
  assert.is(r.status, 499);
  assert.ok(r.usageEstimated, 'the engine never sent its usage: the record says the figures are estimated');
  assert.ok(r.completionTokens >= events - 1 && r.completionTokens < 200, `charged ${r.completionTokens} completion tokens for ${events} events read`);
  assert.ok(r.promptTokens > 0, 'the prompt is charged too');
});

test('a finished stream is charged from the engine report, not an estimate', async () => {
  const res = await request(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-request-id': 'whole' },
    body: JSON.stringify({ model: 'em', prompt: 'Say hi.', max_tokens: 5, stream: true }),
  });
  const text = await res.body.text();
  assert.match(text, /data: \[DONE\]\n\n$/);
  assert.not.match(text, /"usage":\{/, 'the usage chunk the router asked for is not passed to a client that did not ask');
  const r = await record('whole');
  assert.is(r.status, 200);
  assert.not.ok(r.usageEstimated);
  assert.is(r.completionTokens, 5);
});

test('model names clients make up never become metric labels', async () => {
  for (let i = 0; i < 20; i++) {
    const res = await request(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: `made-up-${i}`, messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.is(res.statusCode, 404);
    await res.body.dump();
  }
  let metrics = '';
  await until(async () => {
    metrics = await (await request(`${admin}/metrics`)).body.text();
    return /llmgw_requests_total\{model="unknown",endpoint="",status="404"\} 20/.test(metrics);
  }, 'the 404s counted under model="unknown"');
  assert.not.match(metrics, /made-up-/);
  assert.match(metrics, /llmgw_requests_total\{model="m",/, 'an alias is counted under its model');
  assert.not.match(metrics, /model="em"/);
  const usage = (await (await request(`${admin}/admin/v1/usage?limit=0`)).body.json()) as { totals: { byModel: Record<string, unknown> } };
  assert.equal(Object.keys(usage.totals.byModel).sort(), ['m', 'unknown']);
});

test('GET /v1/models/{id} answers for a model or alias, and 404s in the OpenAI shape otherwise', async () => {
  const ok = await request(`${url}/v1/models/em`);
  assert.is(ok.statusCode, 200);
  assert.equal(((await ok.body.json()) as { id: string; object: string }).object, 'model');
  const missing = await request(`${url}/v1/models/nope`);
  assert.is(missing.statusCode, 404);
  const body = (await missing.body.json()) as { error: { code: string; param: string } };
  assert.is(body.error.code, 'model_not_found');
  assert.is(body.error.param, 'model');
});

test.run();
