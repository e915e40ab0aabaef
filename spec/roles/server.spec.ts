import { join } from 'node:path';
import OpenAI from 'openai';
import { suite } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { request } from 'undici';
import { runCli } from '../support/cli.js';
import { startServer, writeConfig, type Started } from '../support/process.js';

const configPath = writeConfig(
  `listen: "127.0.0.1:0"
admin_listen: "127.0.0.1:0"
admin_token: "s3cret"
log_level: warn
router:
  max_body_bytes: 65536
  poll_interval_ms: 200
models:
  - name: llama-3.1-8b
    aliases: [llama]
simulate:
  - model: llama-3.1-8b
    replicas: 2
    speed: 50
`,
);

const test = suite('server (embedded simulated engines)');
let server: Started;
let url: string;
let admin: string;

test.before(async () => {
  server = await startServer(configPath);
  url = server.match[1]!;
  admin = server.match[2]!;
});
test.after(async () => {
  await server?.stop();
});

test('the official openai client gets chat completions, streamed and not, through the server', async () => {
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused' });
  const models = await client.models.list();
  assert.equal(
    models.data.map((m) => m.id),
    ['llama-3.1-8b', 'llama'],
  );
  const done = await client.chat.completions.create({ model: 'llama', messages: [{ role: 'user', content: 'hello there' }], max_tokens: 8 });
  assert.is(done.model, 'llama-3.1-8b', 'an alias is served by its canonical model');
  assert.is(done.usage?.completion_tokens, 8);
  const { data, response } = await client.chat.completions
    .create({ model: 'llama-3.1-8b', messages: [{ role: 'user', content: 'stream please' }], max_tokens: 5, stream: true, stream_options: { include_usage: true } })
    .withResponse();
  assert.match(response.headers.get('x-llmgw-endpoint') ?? '', /^sim-llama-3\.1-8b-[01]$/);
  let text = '';
  let usage;
  for await (const chunk of data) {
    text += chunk.choices[0]?.delta.content ?? '';
    if (chunk.usage) usage = chunk.usage;
  }
  assert.ok(text.length > 0);
  assert.is(usage?.completion_tokens, 5);
});

test('the openai client gets legacy completions, streamed and not; usage comes only when asked for', async () => {
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused' });
  const done = await client.completions.create({ model: 'llama', prompt: 'Once upon a time', max_tokens: 6 });
  assert.is(done.object, 'text_completion');
  assert.ok(done.choices[0]!.text.length > 0);
  assert.is(done.usage?.completion_tokens, 6);
  let text = '';
  let chunks = 0;
  let usageSeen = false;
  for await (const chunk of await client.completions.create({ model: 'llama', prompt: 'And then', max_tokens: 4, stream: true })) {
    chunks++;
    text += chunk.choices[0]?.text ?? '';
    if (chunk.usage) usageSeen = true;
  }
  assert.ok(chunks >= 4 && text.length > 0);
  assert.is(usageSeen, false, 'the usage chunk the router asked for is not passed to a client that did not');
});

test('concurrent requests are spread over both simulated engines by their in-flight counts', async () => {
  const seen = await Promise.all(
    Array.from({ length: 4 }, async () => {
      // Long enough (~0.4 s at speed 50) that all four are in flight together even when a
      // loaded machine staggers their arrival: the spread is by in-flight counts.
      const res = await request(`${url}/v1/completions`, { method: 'POST', body: JSON.stringify({ model: 'llama', prompt: 'hi', max_tokens: 2000, ignore_eos: true }) });
      await res.body.dump();
      return String(res.headers['x-llmgw-endpoint']);
    }),
  );
  assert.equal(
    seen.filter((e) => e === 'sim-llama-3.1-8b-0').length,
    2,
    `two of four on each engine: ${seen.join(', ')}`,
  );
});

test('bad requests get OpenAI-shaped errors and the server keeps serving', async () => {
  const cases: [string, string, number, RegExp][] = [
    ['malformed JSON', '{"model": "llama", ', 400, /not valid JSON/],
    ['no model', '{"messages": [{"role": "user", "content": "hi"}]}', 400, /model is required/],
    ['unknown model', '{"model": "gpt-9", "messages": [{"role": "user", "content": "hi"}]}', 404, /'gpt-9' does not exist; available: llama-3\.1-8b, llama/],
    ['stream not a boolean', '{"model": "llama", "stream": "yes", "messages": [{"role": "user", "content": "hi"}]}', 400, /stream must be true or false/],
    ['body over the limit', JSON.stringify({ model: 'llama', prompt: 'x'.repeat(70_000) }), 413, /exceeds the limit of 65536 bytes/],
  ];
  for (const [what, body, status, message] of cases) {
    const res = await request(`${url}/v1/chat/completions`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
    const json = (await res.body.json()) as { error: { message: string; type: string; code: string } };
    assert.is(res.statusCode, status, what);
    assert.match(json.error.message, message, what);
    assert.type(json.error.type, 'string');
  }
  const ok = await request(`${url}/v1/completions`, { method: 'POST', body: JSON.stringify({ model: 'llama', prompt: 'still there?', max_tokens: 1 }) });
  assert.is(ok.statusCode, 200);
  await ok.body.dump();
});

test('llmgw ctl actors lists the actors with their threads and counters', async () => {
  const json = await runCli(['ctl', '--admin', admin, 'actors', '--json'], { LLMGW_ADMIN_TOKEN: 's3cret' });
  assert.is(json.code, 0, json.stderr);
  const actors = JSON.parse(json.stdout) as { name: string; thread: string; mailbox: number; processed: number; failures: number; restarts: number }[];
  const byName = new Map(actors.map((a) => [a.name, a]));
  assert.is(byName.get('endpoint-registry')?.thread, 'main');
  assert.is(byName.get('poller:sim-llama-3.1-8b-0')?.thread, 'telemetry');
  assert.is(byName.get('sim:llama-3.1-8b:1')?.thread, 'engines');
  assert.ok(byName.get('endpoint-registry')!.processed > 0, 'probes have been applied');
  for (const a of actors) for (const k of ['mailbox', 'processed', 'failures', 'restarts'] as const) assert.type(a[k], 'number', `${a.name}.${k}`);

  const table = await runCli(['ctl', 'actors', '--admin', admin, '--token', 's3cret']);
  assert.is(table.code, 0, table.stderr);
  assert.match(table.stdout, /^NAME\s+THREAD\s+KIND\s+STATUS\s+MAILBOX/);
  assert.match(table.stdout, /poller:sim-llama-3\.1-8b-0\s+telemetry\s+health-poller\s+running/);

  const hostPort = await runCli(['ctl', 'actors', '--admin', new URL(admin).host, '--json'], { LLMGW_ADMIN_TOKEN: 's3cret' });
  assert.is(hostPort.code, 0, `--admin HOST:PORT as admin_listen is written: ${hostPort.stderr}`);
});

test('ctl says whether the admin token was missing or wrong, and how to pass one', async () => {
  const missing = await runCli(['ctl', 'actors', '--admin', admin]);
  assert.is(missing.code, 1);
  assert.match(missing.stderr, /^llmgw ctl: \S+: the admin API needs a token and none was sent .*; pass the admin_token with --token or LLMGW_ADMIN_TOKEN\n$/);
  const wrong = await runCli(['ctl', 'actors', '--admin', admin, '--token', 'guess']);
  assert.is(wrong.code, 1);
  assert.match(wrong.stderr, /^llmgw ctl: \S+: the admin token sent is wrong .*; the token from --token is not the server's admin_token\n$/);
  const wrongEnv = await runCli(['ctl', 'actors', '--admin', admin], { LLMGW_ADMIN_TOKEN: 'guess' });
  assert.match(wrongEnv.stderr, /the token from LLMGW_ADMIN_TOKEN is not/);
  const res = await request(`${admin}/admin/v1/actors`, { headers: { authorization: 'Basic czNjcmV0' } });
  assert.is(res.statusCode, 401);
  assert.match(((await res.body.json()) as { error: { message: string } }).error.message, /must be 'Bearer <admin_token>'/);
});

test('the admin port exports the runtime metrics of every thread', async () => {
  const res = await request(`${admin}/metrics`);
  const text = await res.body.text();
  assert.match(text, /llmgw_actor_messages_processed_total\{actor="endpoint-registry",thread="main"\} \d+/);
  assert.match(text, /llmgw_actor_mailbox_depth\{actor="poller:sim-llama-3\.1-8b-1",thread="telemetry"\}/);
  assert.match(text, /llmgw_actor_handling_seconds_bucket\{le="0\.0025",actor="sim:llama-3\.1-8b:0",thread="engines"\}/);
  assert.match(text, /llmgw_process_resident_memory_bytes/);
});

test.run();
