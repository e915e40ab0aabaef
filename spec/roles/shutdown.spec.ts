// SIGTERM with requests in flight: short ones finish, a stream still running at the
// deadline ends with an error event and [DONE] (not a silent cut), the admin port says
// how the drain goes until the end, and the log says how many were cut.

import { request } from 'undici';
import * as assert from 'uvu/assert';
import { startProcess, startServer, writeConfig, type Started, type StartedServer } from '../support/process.js';
import { until } from '../support/until.js';
import { suite } from '../support/uvu.js';

const test = suite('shutdown: drain, then cut what is left with an error event (real processes)');

let sim: Started;

test.before(async () => {
  // Slow: a 400-token stream takes far longer than the grace period.
  sim = await startProcess(['run', '--role=sim', '--listen', '127.0.0.1:0', '--model', 'm', '--speed', '0.5'], { waitFor: /listening on (http:\S+)/ });
});

test.after(async () => {
  await sim?.stop();
});

/** A server in front of the slow engine, with `graceMs` to drain in. */
function serverWithGrace(graceMs: number): Promise<StartedServer> {
  const config = writeConfig(
    `listen: "127.0.0.1:0"
admin_listen: "127.0.0.1:0"
runtime: { shutdown_timeout_ms: ${graceMs} }
router: { poll_interval_ms: 100 }
models: [{ name: m }]
endpoints: [{ id: a, url: "${sim.match[1]}", models: [m] }]
`,
  );
  // The specs run with logs silenced; these read the shutdown's warning.
  return startServer(config, { env: { LLMGW_LOG_LEVEL: 'warn' } });
}

test('a stream running at the deadline ends with an error event and [DONE]; the admin port reports the drain', async () => {
  const server = await serverWithGrace(1500);
  const [url, admin] = [server.match[1]!, server.match[2]!];
  const exited = new Promise<number | null>((resolve) => server.child.once('exit', (code) => resolve(code)));
  try {
    const res = await request(`${url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', prompt: 'A long story, please.', max_tokens: 400, stream: true }),
    });
    assert.is(res.statusCode, 200);
    let text = '';
    const reading = (async () => {
      for await (const chunk of res.body) text += (chunk as Buffer).toString('utf8');
    })();
    await until(() => text.includes('\n\n'), 'the first event');

    server.child.kill('SIGTERM');
    let health: { status: string; in_flight: number; cut_in_ms: number } | undefined;
    await until(async () => {
      const h = await request(`${admin}/health`);
      health = (await h.body.json()) as typeof health;
      return h.statusCode === 503;
    }, 'the admin port reporting the drain');
    assert.is(health!.status, 'draining');
    assert.is(health!.in_flight, 1);
    assert.ok(health!.cut_in_ms > 0 && health!.cut_in_ms <= 1500, `cut in ${health!.cut_in_ms} ms`);

    await reading;
    const events = text.split('\n\n').filter((e) => e !== '');
    assert.ok(events.length > 3, 'the stream ran until the deadline');
    assert.is(events.at(-1), 'data: [DONE]');
    const error = JSON.parse(events.at(-2)!.slice('data: '.length)) as { error: { code: string; message: string } };
    assert.is(error.error.code, 'shutting_down');
    assert.match(error.error.message, /grace period of 1500 ms/);
    assert.is(await exited, 0);
    assert.match(server.stderr(), /"msg":"shutdown grace period over: requests still in flight were cut".*"cut":1/);
  } finally {
    await server.stop();
  }
});

test('requests that finish within the grace period are not cut', async () => {
  const server = await serverWithGrace(8000);
  const url = server.match[1]!;
  const exited = new Promise<number | null>((resolve) => server.child.once('exit', (code) => resolve(code)));
  try {
    const res = await request(`${url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', prompt: 'Short.', max_tokens: 8, stream: true }),
    });
    let text = '';
    const reading = (async () => {
      for await (const chunk of res.body) text += (chunk as Buffer).toString('utf8');
    })();
    await until(() => text.includes('\n\n'), 'the first event');
    server.child.kill('SIGTERM');
    await reading;
    assert.not.match(text, /"error"/);
    assert.match(text, /data: \[DONE\]\n\n$/);
    assert.is(await exited, 0);
    assert.not.match(server.stderr(), /were cut/);
  } finally {
    await server.stop();
  }
});

test.run();
