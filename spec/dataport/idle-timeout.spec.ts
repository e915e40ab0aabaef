// The two timers of a stream: the first token may take up to first_token_timeout_ms (a
// long prefill under load), the gaps after it up to idle_timeout_ms; a client slow to
// read is not the engine's silence.

import { request } from 'undici';
import * as assert from 'uvu/assert';
import { until } from '../support/until.js';
import { suite } from '../support/uvu.js';
import { startInProcess, type InProcessPort } from './in-process.js';

const test = suite('stream timers: first token, then idle gaps (in-process data port)');

const IDLE_MS = 300;
const FIRST_TOKEN_MS = 5_000;
let inProcess: InProcessPort;
const event = (content: string): string => `data: ${JSON.stringify({ id: 'x', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content } }] })}\n\n`;

test.before(async () => {
  inProcess = await startInProcess(
    `models: [{ name: m }]
router: { first_token_timeout_ms: ${FIRST_TOKEN_MS}, idle_timeout_ms: ${IDLE_MS}, admission: { enabled: false } }
endpoints: [{ id: e, url: "http://127.0.0.1:9", models: [m] }]
`,
    {
      e: (_req, res, raw) => {
        const prompt = JSON.stringify((JSON.parse(raw.toString('utf8')) as { messages: unknown }).messages);
        // vLLM sends the head at once and the first chunk after prefill.
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.flushHeaders();
        const later = (ms: number, f: () => void): void => void setTimeout(f, ms);
        if (prompt.includes('slow prefill')) return later(IDLE_MS * 8, () => res.end(event('a') + event('b') + 'data: [DONE]\n\n'));
        if (prompt.includes('never answers')) return; // the head went out, no chunk follows
        if (prompt.includes('stalls')) return later(10, () => res.write(event('a'))); // and then nothing
        if (prompt.includes('big')) {
          // Far more than the socket buffers hold: the data port must wait for the client.
          const chunk = event('x'.repeat(60_000));
          for (let i = 0; i < 100; i++) res.write(chunk);
          return void res.end('data: [DONE]\n\n');
        }
      },
    },
  );
});

test.after(async () => {
  await inProcess.close();
});

const open = (content: string) =>
  request(`${inProcess.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content }] }),
  });

test('a first token slower than the idle limit but within the first-token limit is served', async () => {
  const res = await open('slow prefill');
  assert.is(res.statusCode, 200);
  const text = await res.body.text();
  assert.not.match(text, /"error"/);
  assert.match(text, /data: \[DONE\]\n\n$/);
  await until(() => inProcess.records.length > 0, 'the record');
  assert.is(inProcess.records.at(-1)!.status, 200);
  assert.is(inProcess.table.get('e')!.health.consecutiveFailures, 0);
});

test('an engine silent mid-stream past the idle limit: the stream ends with an error event and [DONE]', async () => {
  const before = inProcess.records.length;
  const res = await open('stalls');
  const text = await res.body.text();
  assert.match(text, /data: \{"error":\{"message":"endpoint e sent nothing for 300 ms mid-response \(router\.idle_timeout_ms\)","type":"server_error","param":null,"code":"upstream_timeout"\}\}\n\ndata: \[DONE\]\n\n$/);
  await until(() => inProcess.records.length > before, 'the record');
  assert.is(inProcess.records.at(-1)!.error, 'LLMGW_UPSTREAM_TIMEOUT');
  assert.is(inProcess.table.get('e')!.health.consecutiveFailures, 1, 'the silent engine is blamed');
});

test('a client that stops reading for longer than the idle limit does not make the engine silent', async () => {
  const res = await open('big');
  const reader = res.body[Symbol.asyncIterator]();
  await reader.next();
  // Stop reading until the data port has had to wait on us for longer than the idle limit.
  await new Promise((resolve) => setTimeout(resolve, IDLE_MS * 3));
  let text = '';
  for (let next = await reader.next(); !next.done; next = await reader.next()) text += (next.value as Buffer).toString('utf8');
  assert.not.match(text, /"error"/);
  assert.match(text, /data: \[DONE\]\n\n$/);
});

test('no first token within the first-token limit is a 504 the OpenAI clients do not retry on their own', async () => {
  const res = await open('never answers');
  assert.is(res.statusCode, 504);
  assert.is(res.headers['x-should-retry'], 'false');
  const body = (await res.body.json()) as { error: { code: string; message: string } };
  assert.is(body.error.code, 'upstream_timeout');
  assert.match(body.error.message, /sent no first token within 5000 ms/);
});

test.run();
