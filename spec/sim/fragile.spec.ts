// The fragile sim engine stands in for an engine that trusts its input: the data port's
// fuzz spec relies on it dying where a careful engine would answer 400.

import type { ChildProcess } from 'node:child_process';
import * as assert from 'uvu/assert';
import { request } from 'undici';
import { suite } from '../support/uvu.js';
import { startSim, type SimProcess } from './helpers.js';

const test = suite('sim --fragile: bad fields and poisoned prompts crash the process');

const sims: SimProcess[] = [];
const fragile = async (): Promise<SimProcess> => {
  const s = await startSim('m', ['--speed', '100', '--fragile', '--poison-marker', 'XYZZY']);
  sims.push(s);
  return s;
};
const exitCode = (child: ChildProcess): Promise<number | null> =>
  child.exitCode !== null ? Promise.resolve(child.exitCode) : new Promise((resolve) => child.once('exit', (code) => resolve(code)));
const post = (url: string, body: unknown) =>
  request(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then(
    async (r) => ({ status: r.statusCode, text: await r.body.text() }),
    (err: Error) => ({ status: 0, text: err.message }),
  );

test.after(async () => {
  await Promise.all(sims.map((s) => s.stop()));
});

test('a valid request is served; a field of the wrong type kills the engine without an answer', async () => {
  const sim = await fragile();
  const ok = await post(sim.url, { model: 'm', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
  assert.is(ok.status, 200, ok.text);
  const tooLong = await post(sim.url, { model: 'm', messages: [{ role: 'user', content: 'hi' }], max_tokens: 10_000_000 });
  assert.is(tooLong.status, 400, 'context too long is the engine refusing, not a crash');
  const exited = exitCode(sim.child);
  const bad = await post(sim.url, { model: 'm', messages: [{ role: 'user', content: 'hi' }], max_tokens: {} });
  assert.is(bad.status, 0, `no answer expected, got ${bad.status} ${bad.text}`);
  assert.is(await exited, 70);
  assert.match(sim.stderr(), 'fragile engine crashed on a bad field');
});

test('a valid request whose prompt holds the poison marker kills it too', async () => {
  const sim = await fragile();
  const exited = exitCode(sim.child);
  const res = await post(sim.url, { model: 'm', messages: [{ role: 'user', content: 'say XYZZY' }], max_tokens: 2 });
  assert.is(res.status, 0, `no answer expected, got ${res.status} ${res.text}`);
  assert.is(await exited, 70);
  assert.match(sim.stderr(), 'poisoned prompt');
});

test.run();
