// Admission's prefill pacing as the data port applies it: the prompt tokens it counts
// are those an engine will prefill, not those its prefix cache is expected to hold.

import type { ServerResponse } from 'node:http';
import { request } from 'undici';
import * as assert from 'uvu/assert';
import { until } from '../support/until.js';
import { suite } from '../support/uvu.js';
import { startInProcess, type InProcessPort } from './in-process.js';

const test = suite('admit stage: prefill pacing counts only what is not cached (in-process data port, holding engine)');

/** Prompts the engine received and holds unanswered, with their responses. */
const held: { prompt: string; res: ServerResponse }[] = [];
let inProcess: InProcessPort;

test.before(async () => {
  inProcess = await startInProcess(
    `models:
  - { name: m }
router:
  # Tokens only: what is counted is at stake here, not the engine's speed.
  admission: { priority_header: true, prefill_tokens_per_replica: 1000, prefill_ms_per_replica: 0, stale_inflight_per_replica: 100 }
endpoints:
  - { id: engine, url: "http://127.0.0.1:9", models: [m] }
`,
    {
      engine: (_req, res, raw) => {
        held.push({ prompt: (JSON.parse(raw.toString('utf8')) as { prompt: string }).prompt, res });
      },
    },
  );
});

test.after(async () => {
  for (const h of held) h.res.destroy();
  await inProcess.close();
});

/** The status, or what broke the request (a failing run closes the engine under it). */
function completion(band: string, prompt: string): Promise<number | string> {
  return request(`${inProcess.url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-llmgw-priority': band },
    body: JSON.stringify({ model: 'm', prompt, max_tokens: 4 }),
  }).then(
    async (r) => (await r.body.text(), r.statusCode),
    (err: Error) => err.message,
  );
}

function answer(h: { res: ServerResponse }): void {
  h.res.writeHead(200, { 'content-type': 'application/json' });
  h.res.end(JSON.stringify({ id: 'x', object: 'text_completion', model: 'm', choices: [{ index: 0, text: 'ok', finish_reason: 'length' }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }));
}

const bronze = (prompt: string): Promise<number | string> => completion('bronze', prompt);

test('a prompt whose head an engine served is paced by its uncached tail; an unseen prompt of the same length still waits', async () => {
  // Pacing protects a first band in use: one interactive request first.
  const top = completion('platinum', 'Are you there?');
  await until(() => held.length === 1, 'the interactive prompt at the engine');
  answer(held.shift()!);
  assert.is(await top, 200);
  const shared = 'You are a careful assistant who answers in full sentences. '.repeat(50); // 3,000 characters: 750 tokens
  const first = bronze(`${shared}first question`);
  await until(() => held.length === 1, 'the first prompt at the engine');
  // 750 tokens being prefilled; 750 more would pass the budget of 1,000 — but all but the
  // last block of this one is the head the engine was just sent.
  const second = bronze(`${shared}second question`);
  await until(() => held.length === 2, 'the second prompt, mostly cached, at the engine beside the first');
  const other = bronze('Something else entirely, never seen before. '.repeat(68));
  await until(() => inProcess.admissions!.get('m')!.queue.length === 1, 'the unseen prompt queued');
  assert.is(held.length, 2, 'an unseen prompt of 750 tokens waits for the prefills ahead of it');
  // The engine's answers are the first tokens: those waiting go.
  answer(held[0]!);
  answer(held[1]!);
  await until(() => held.length === 3, 'the unseen prompt released as the prefills ahead of it end');
  answer(held[2]!);
  assert.equal(await Promise.all([first, second, other]), [200, 200, 200]);
});

test.run();
