// A query of death: one valid request that kills the engine it reaches. Retried as a
// plain failure, it would kill an engine per attempt and then go on to the fallbacks.
// Here it reaches two engines at most, blames neither, and the model keeps serving.

import { join } from 'node:path';
import { request } from 'undici';
import * as assert from 'uvu/assert';
import { startProcess, startServer, writeConfig, type Started } from '../support/process.js';
import { until } from '../support/until.js';
import { suite } from '../support/uvu.js';

const test = suite('poison containment: a request that kills engines reaches at most two (real processes)');

const MARKER = 'KILL-THE-ENGINE';
const sims: Started[] = [];
let backup: Started;
let server: Started;
let url: string;
let admin: string;

const alive = (s: Started): boolean => s.child.exitCode === null && s.child.signalCode === null;

interface EndpointView {
  id: string;
  ready: boolean;
  consecutiveFailures: number;
  breaker: string;
}

test.before(async () => {
  const fragile = (model: string, seed: number): Promise<Started> =>
    startProcess(['run', '--role=sim', '--listen', '127.0.0.1:0', '--model', model, '--speed', '100', '--seed', String(seed), '--fragile', '--poison-marker', MARKER], {
      waitFor: /listening on (http:\S+)/,
    });
  sims.push(...(await Promise.all([0, 1, 2, 3].map((i) => fragile('pm', i)))));
  backup = await fragile('pm-backup', 9);
  const config = writeConfig(
    `listen: "127.0.0.1:0"
admin_listen: "127.0.0.1:0"
log_level: error
router:
  poll_interval_ms: 100
  retries: { max_attempts: 4 }
  cooldown: { failures: 1, ms: 60000 }
  breaker: { failures: 1, open_ms: 60000 }
models:
  - { name: pm, fallbacks: [pm-backup] }
  - { name: pm-backup }
endpoints:
${sims.map((s, i) => `  - { id: e${i}, url: "${s.match[1]}", models: [pm] }`).join('\n')}
  - { id: backup, url: "${backup.match[1]}", models: [pm-backup] }
`,
  );
  server = await startServer(config);
  url = server.match[1]!;
  admin = server.match[2]!;
  await until(async () => (await endpoints()).every((e) => e.ready), 'every endpoint ready');
});

test.after(async () => {
  await Promise.all([server?.stop(), backup?.stop(), ...sims.map((s) => s.stop())]);
});

async function endpoints(): Promise<EndpointView[]> {
  return (await (await request(`${admin}/admin/v1/endpoints`)).body.json()) as EndpointView[];
}

async function chat(content: string): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  const res = await request(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'pm', messages: [{ role: 'user', content }], max_tokens: 4 }),
  });
  return { status: res.statusCode, headers: res.headers, body: await res.body.text() };
}

test('the poisoned request kills two engines, not four, and never reaches the fallback', async () => {
  const r = await chat(`please ${MARKER} now`);
  assert.is(r.status, 502, r.body);
  assert.is(r.headers['x-should-retry'], 'false', 'an OpenAI SDK does not retry it on its own');
  const error = (JSON.parse(r.body) as { error: { code: string; message: string } }).error;
  assert.is(error.code, 'request_poisoned');
  assert.match(error.message, /failed the same way \(connection dropped\) on two endpoints/);
  await until(() => sims.filter((s) => !alive(s)).length === 2, 'two engines dead');
  assert.is(sims.filter(alive).length, 2, 'two engines never saw it');
  assert.ok(alive(backup), 'the fallback never saw it');
  // Neither failure counted against its endpoint: a breaker that opens on one failure stays closed.
  const views = await endpoints();
  for (const e of views) assert.is(e.consecutiveFailures, 0, `${e.id} blamed`);
});

test('the model keeps serving other requests on the engines that are left', async () => {
  await until(async () => (await endpoints()).filter((e) => e.id.startsWith('e') && e.ready).length === 2, 'the pollers taking the dead engines out');
  for (let i = 0; i < 10; i++) {
    const r = await chat(`an ordinary question ${i}`);
    assert.is(r.status, 200, r.body);
  }
});

test.run();
