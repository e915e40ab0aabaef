// The router against real engine processes: failures before the first byte are retried
// elsewhere, streams cut mid-way end with an error event, the breaker opens on a dead
// engine and closes once it is back, fallbacks serve when a model has no endpoint, and
// a client that leaves cancels the engine's work.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { suite } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { request } from 'undici';
import { runCli } from '../support/cli.js';
import { startProcess, startServer, writeConfig, type Started } from '../support/process.js';
import { until } from '../support/until.js';

const test = suite('router e2e: failover, breaker, fallback, cancellation (real processes)');

const SIM_LINE = /listening on (http:\S+)/;
const sims: Record<string, Started> = {};
const urls: Record<string, string> = {};
let server: Started;
let sick: Server;
let sickPosts = 0;
let url: string;
let admin: string;

async function startSim(name: string, model: string, listen = '127.0.0.1:0', speed = '20'): Promise<void> {
  sims[name] = await startProcess(['run', '--role=sim', '--listen', listen, '--model', model, '--speed', speed, '--seed', String(name.charCodeAt(0))], {
    waitFor: SIM_LINE,
  });
  urls[name] = sims[name].match[1]!;
}

interface EndpointView {
  id: string;
  ready: boolean;
  breaker: string;
  inflight: number;
  consecutiveFailures: number;
}
async function endpoints(): Promise<Map<string, EndpointView>> {
  const res = await request(`${admin}/admin/v1/endpoints`);
  const list = (await res.body.json()) as EndpointView[];
  return new Map(list.map((e) => [e.id, e]));
}

async function chat(model: string, content: string, extra: Record<string, unknown> = {}): Promise<{ status: number; endpoint: string; body: string }> {
  const res = await request(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content }], max_tokens: 4, ...extra }),
  });
  return { status: res.statusCode, endpoint: String(res.headers['x-llmgw-endpoint'] ?? ''), body: await res.body.text() };
}

async function simRunning(u: string): Promise<number> {
  const text = await (await request(`${u}/metrics`)).body.text();
  return Number(/^vllm:num_requests_running\{[^}]*\} (\S+)$/m.exec(text)?.[1] ?? NaN);
}

test.before(async () => {
  await Promise.all([startSim('a', 'm'), startSim('b', 'm'), startSim('c', 'backup'), startSim('d', 'flaky'), startSim('slow', 'slow', '127.0.0.1:0', '0.0001')]);
  // An engine that passes every readiness check and fails every request.
  sick = createServer((req, res) => {
    if (req.method === 'POST') {
      sickPosts++;
      req.resume();
      res.writeHead(503, { 'content-type': 'application/json' }).end('{"error":{"message":"engine dead","type":"server_error","code":503}}');
    } else if (req.url === '/v1/models') res.end('{"object":"list","data":[{"id":"flaky"}]}');
    else res.end();
  });
  await new Promise<void>((resolve) => sick.listen(0, '127.0.0.1', resolve));
  urls.sick = `http://127.0.0.1:${(sick.address() as AddressInfo).port}`;
  const config = writeConfig(
    `listen: "127.0.0.1:0"
admin_listen: "127.0.0.1:0"
log_level: error
router:
  poll_interval_ms: 100
  first_token_timeout_ms: 1500
  retries: { max_attempts: 3 }
  cooldown: { failures: 100, ms: 100 }
  # A pause a few short requests cannot outlast on a loaded machine: specs wait for its end.
  breaker: { failures: 3, open_ms: 2000, max_open_ms: 8000 }
models:
  - name: m
    fallbacks: [backup]
  - name: backup
  - name: orphan
    fallbacks: [backup]
  - name: slow
  - name: flaky
endpoints:
  - { id: a, url: "${urls.a}", models: [m] }
  - { id: b, url: "${urls.b}", models: [m] }
  - { id: c, url: "${urls.c}", models: [backup] }
  - { id: nowhere, url: "http://127.0.0.1:9", models: [orphan] }
  - { id: slow, url: "${urls.slow}", models: [slow] }
  - { id: sick, url: "${urls.sick}", models: [flaky], priority: 1 }
  - { id: d, url: "${urls.d}", models: [flaky] }
`,
  );
  server = await startServer(config);
  url = server.match[1]!;
  admin = server.match[2]!;
});

test.after(async () => {
  await Promise.all([server?.stop(), ...Object.values(sims).map((s) => s.stop())]);
  sick?.close();
});

test('a model with no usable endpoint is served by its fallback, and the record says so', async () => {
  const r = await chat('orphan', 'who serves me?');
  assert.is(r.status, 200, r.body);
  assert.is(r.endpoint, 'c');
  assert.is((JSON.parse(r.body) as { model: string }).model, 'backup');
  await until(async () => {
    const usage = (await (await request(`${admin}/admin/v1/usage?limit=5`)).body.json()) as { recent: { modelAsked: string; modelServed: string; fallback: boolean }[] };
    return usage.recent.some((u) => u.modelAsked === 'orphan' && u.modelServed === 'backup' && u.fallback);
  }, 'a fallback usage record');
});

test('a failure before the first byte is retried on another endpoint until the breaker takes the failing one out; after its pause one trial goes', async () => {
  // `sick` has the higher priority, so every request tries it first while its breaker is closed.
  for (let i = 0; i < 5; i++) {
    const r = await chat('flaky', `try ${i}`);
    assert.is(r.status, 200, r.body);
    assert.is(r.endpoint, 'd');
  }
  assert.is(sickPosts, 3, 'three failures open the breaker; later requests skip it');
  assert.is((await endpoints()).get('sick')!.breaker, 'open');
  await until(async () => {
    const usage = (await (await request(`${admin}/admin/v1/usage?limit=20`)).body.json()) as { recent: { modelAsked: string; attempts: number }[] };
    return usage.recent.filter((u) => u.modelAsked === 'flaky').map((u) => u.attempts).join() === '2,2,2,1,1';
  }, 'usage records with the attempts');
  assert.match(await (await request(`${admin}/metrics`)).body.text(), /llmgw_retries_total\{model="flaky"\} 3/);

  // Nothing is sent to `flaky` while the pause runs out, so from here the breaker stays
  // half-open until the next request: what the operator sees no longer depends on timing.
  await until(async () => (await endpoints()).get('sick')!.breaker === 'half-open', 'the pause over');
  const ctl = await runCli(['ctl', 'endpoints', '--admin', admin]);
  assert.is(ctl.code, 0, ctl.stderr);
  assert.match(ctl.stdout, /^ID\s+MODELS\s+PRIO\s+STATE/);
  assert.match(ctl.stdout, /\nsick\s+flaky\s+1\s+routable\s+0\s+-\s+-\s+-\s+-\s+-\s+never\s+half-open\s+metrics: \/metrics: no vllm/, ctl.stdout);
  assert.match(ctl.stdout, /\nnowhere\s+orphan\s+0\s+not-ready\s.*unreachable/);
  assert.match(ctl.stdout, /\nd\s+flaky\s+0\s+routable\s+0\s+0\s+0\s+(?:-|\d+ \(\w+\))\s+(?:-|[\d.]+ tok\/ms)\s+0%\s+\d\.\ds ago\s+closed/);
  assert.match(await (await request(`${admin}/metrics`)).body.text(), /llmgw_endpoint_breaker_state\{endpoint="sick"\} 1/);

  // The one trial fails: served elsewhere, and the breaker opens again for twice as long.
  const r = await chat('flaky', 'trial');
  assert.equal([r.status, r.endpoint, sickPosts], [200, 'd', 4]);
  assert.is((await endpoints()).get('sick')!.breaker, 'open');
  assert.match(await (await request(`${admin}/metrics`)).body.text(), /llmgw_endpoint_breaker_state\{endpoint="sick"\} 2/);
});

test('an engine that sends no first token in time gets a 504 in the OpenAI shape', async () => {
  const r = await chat('slow', 'x'.repeat(2000), { max_tokens: 1 });
  assert.is(r.status, 504, r.body);
  const err = (JSON.parse(r.body) as { error: { message: string; type: string } }).error;
  assert.match(err.message, /endpoint slow sent no first token within 1500 ms/);
  assert.is(err.type, 'server_error');
});

test('a client that disconnects cancels the engine request', async () => {
  const ac = new AbortController();
  const res = await request(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'backup', stream: true, messages: [{ role: 'user', content: 'a long story please' }], max_tokens: 20_000 }),
    signal: ac.signal,
  });
  assert.is(res.statusCode, 200);
  const reader = res.body[Symbol.asyncIterator]();
  await reader.next(); // streaming has begun
  await until(async () => (await simRunning(urls.c!)) === 1, 'the engine running the request');
  ac.abort();
  await reader.return?.();
  await until(async () => (await simRunning(urls.c!)) === 0, 'the engine dropping the cancelled request');
});

test('an engine killed mid-load: fresh requests are retried elsewhere, streams end with an error event, the breaker opens and later closes', async () => {
  // Streams that will be in flight on both engines when `a` dies.
  const live: { endpoint: string; text: string }[] = [];
  const streams = Array.from({ length: 6 }, async (_, i) => {
    const res = await request(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: `stream ${i}` }], max_tokens: 20_000 }),
    });
    const s = { endpoint: String(res.headers['x-llmgw-endpoint']), text: '' };
    live.push(s);
    for await (const chunk of res.body) {
      s.text += chunk;
      if (s.endpoint === 'b' && s.text.length > 2_000) break; // b's streams are healthy; stop reading them
    }
    return s;
  });
  await until(() => live.filter((s) => s.endpoint === 'a' && s.text.length > 0).length >= 3, 'three streams flowing from a');
  sims.a!.child.kill('SIGKILL');

  // Requests sent now may still pick `a` until the poller notices: none may fail.
  const fresh = await Promise.all(Array.from({ length: 8 }, (_, i) => chat('m', `after the crash ${i}`)));
  for (const r of fresh) {
    assert.is(r.status, 200, r.body);
    assert.is(r.endpoint, 'b');
  }

  const ended = await Promise.all(streams);
  const onA = ended.filter((s) => s.endpoint === 'a');
  assert.ok(onA.length >= 3, JSON.stringify(ended.map((s) => [s.endpoint, s.text.length, s.text.slice(-300)])));
  for (const s of onA) {
    assert.match(s.text, /data: \{"error":\{"message":"endpoint a failed mid-response[^"]*","type":"server_error"/);
    assert.ok(s.text.endsWith('data: [DONE]\n\n'), 'the stream is closed properly');
  }
  // Tripped: `a` is down, so no trial can close it; whether its pause already ran out
  // while the streams ended (half-open) is only the clock.
  const tripped = (await endpoints()).get('a')!;
  assert.ok(tripped.breaker !== 'closed' && tripped.consecutiveFailures >= 3, JSON.stringify(tripped));

  // Bring `a` back on the same port: the poller marks it ready, the breaker lets a trial
  // request through once its pause is over, and the success closes it.
  await startSim('a', 'm', new URL(urls.a!).host);
  await until(async () => (await endpoints()).get('a')!.ready, 'a ready again');
  await until(
    async () => {
      await Promise.all([chat('m', 'knock knock'), chat('m', 'anyone there')]);
      return (await endpoints()).get('a')!.breaker === 'closed';
    },
    'the breaker closed after recovery',
  );
  const metrics = await (await request(`${admin}/metrics`)).body.text();
  assert.match(metrics, /llmgw_endpoint_breaker_state\{endpoint="a"\} 0/);
});

test('a 10 MB body is refused with 413 and the server keeps serving', async () => {
  const res = await request(`${url}/v1/completions`, { method: 'POST', body: JSON.stringify({ model: 'm', prompt: 'x'.repeat(10 * 1024 * 1024) }) });
  assert.is(res.statusCode, 413);
  assert.match(((await res.body.json()) as { error: { message: string } }).error.message, /exceeds the limit of 4194304 bytes/);
  assert.is((await chat('m', 'still here?')).status, 200);
});

test('every request leaves exactly one usage record, refused ones included', async () => {
  const before = ((await (await request(`${admin}/admin/v1/usage?limit=0`)).body.json()) as { totals: { requests: number } }).totals.requests;
  const statuses = await Promise.all([
    chat('m', 'one').then((r) => r.status),
    chat('nope', 'two').then((r) => r.status),
    request(`${url}/v1/chat/completions`, { method: 'POST', body: '{"model": ' }).then(async (r) => (await r.body.dump(), r.statusCode)),
  ]);
  assert.equal(statuses, [200, 404, 400]);
  await until(async () => {
    const after = ((await (await request(`${admin}/admin/v1/usage?limit=0`)).body.json()) as { totals: { requests: number } }).totals.requests;
    return after === before + 3;
  }, 'three more usage records');
});

test.run();
