// The access log: one JSON line per inference request on stderr, switched by access_log.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { suite } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { AccessLog } from '../../src/dataport/access-log.js';
import type { UsageRecord } from '../../src/messages/accounting.js';
import { startProcess, type Started } from '../support/process.js';
import { until } from '../support/until.js';

const test = suite('access log');

const record = (id: string, over: Partial<UsageRecord> = {}): UsageRecord => ({
  id,
  at: Date.parse('2026-01-02T03:04:05.000Z'),
  path: '/v1/chat/completions',
  modelAsked: 'llama',
  modelServed: 'llama-3.1-8b',
  fallback: false,
  endpoint: 'gpu-a-0',
  status: 200,
  error: null,
  stream: true,
  promptTokens: 3,
  completionTokens: 5,
  cachedTokens: 0,
  usageEstimated: false,
  ttftMs: 1.23456,
  durationMs: 250.5,
  queueMs: 0,
  band: null,
  attempts: 1,
  scheduleMicros: 1,
  profile: 'chat',
  ...over,
});

test('the records of one turn are written after it, in one write, one line each', async () => {
  const writes: string[] = [];
  const log = new AccessLog((t) => writes.push(t));
  log.add(record('a'));
  log.add(record('b', { band: 'bronze', queueMs: 12.34567, status: 503, endpoint: null, modelServed: null, ttftMs: null, error: 'LLMGW_NO_ENDPOINT' }));
  assert.equal(writes, [], 'nothing is formatted or written during the turn');
  await new Promise((r) => setImmediate(r));
  assert.is(writes.length, 1);
  const lines = writes[0]!.split('\n');
  assert.is(lines.pop(), '', 'every line ends with a newline');
  assert.equal(JSON.parse(lines[0]!), {
    t: '2026-01-02T03:04:05.250Z',
    level: 'info',
    component: 'access',
    msg: 'request',
    method: 'POST',
    path: '/v1/chat/completions',
    status: 200,
    model: 'llama',
    served: 'llama-3.1-8b',
    endpoint: 'gpu-a-0',
    durationMs: 250.5,
    ttftMs: 1.235,
    queueMs: 0,
    request: 'a',
  });
  const refused = JSON.parse(lines[1]!) as Record<string, unknown>;
  assert.equal([refused.status, refused.endpoint, refused.error, refused.request, refused.band, refused.queueMs], [503, null, 'LLMGW_NO_ENDPOINT', 'b', 'bronze', 12.346]);
});

const dir = mkdtempSync(join(tmpdir(), 'llmgw-access-'));
const config = join(dir, 'llmgw.yaml');
writeFileSync(config, 'listen: "127.0.0.1:0"\nadmin_listen: "127.0.0.1:0"\nlog_level: info\nmodels: [{ name: m }]\nsimulate: [{ model: m, speed: 50 }]\n');
let on: Started | undefined;
let off: Started | undefined;
test.after(async () => {
  await Promise.all([on?.stop(), off?.stop()]);
});

test('a server logs each request it served, and none with access_log off', async () => {
  const waitFor = /listening on (\S+) \(admin (\S+)\)/;
  // The spec runner silences logs through LLMGW_LOG_LEVEL, which beats the file.
  const env = { LLMGW_LOG_LEVEL: 'info' };
  [on, off] = await Promise.all([
    startProcess(['run', '--role=server', '--config', config], { waitFor, env }),
    startProcess(['run', '--role=server', '--config', config], { waitFor, env: { ...env, LLMGW_ACCESS_LOG: 'false' } }),
  ]);
  for (const s of [on, off]) {
    const res = await request(`${s.match[1]}/v1/completions`, { method: 'POST', body: JSON.stringify({ model: 'm', prompt: 'hi', max_tokens: 2 }), headers: { 'x-request-id': 'req-1' } });
    assert.is(res.statusCode, 200);
    await res.body.dump();
  }
  const line = (s: Started): Record<string, unknown> | undefined => {
    const m = /^(\{.*"component":"access".*)\n/m.exec(s.stderr());
    return m ? (JSON.parse(m[1]!) as Record<string, unknown>) : undefined;
  };
  await until(() => line(on!) !== undefined, 'the access line');
  const l = line(on)!;
  assert.equal([l.method, l.path, l.status, l.model, l.endpoint, l.request], ['POST', '/v1/completions', 200, 'm', 'sim-m-0', 'req-1']);
  assert.type(l.durationMs, 'number');
  // The access line would be written in the same turn as the usage batch is sent: once
  // the accounting actor has the record, the line would have been written before it.
  await until(async () => {
    const res = await request(`${off!.match[2]}/admin/v1/usage`);
    return ((await res.body.json()) as { totals: { requests: number } }).totals.requests === 1;
  }, 'the usage record of the server without access log');
  assert.is(line(off), undefined, off.stderr());
});

test.run();
