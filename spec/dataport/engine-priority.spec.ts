// Priority reaches the engine: where the config says an engine orders its queue by the
// request's `priority` field, the admission band is sent in it, in the engine's order;
// elsewhere the body goes as the client sent it.

import { request } from 'undici';
import * as assert from 'uvu/assert';
import { suite } from '../support/uvu.js';
import { startInProcess, type EngineHandler, type InProcessPort } from './in-process.js';

const test = suite('the admission band reaches engines that schedule by priority');

/** Raw bodies each engine received, by model. */
const received: Record<string, string[]> = { lower: [], higher: [], plain: [] };
let inProcess: InProcessPort;

const engine =
  (model: string): EngineHandler =>
  (_req, res, raw) => {
    received[model]!.push(raw.toString('utf8'));
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ id: 'x', object: 'chat.completion', model, choices: [], usage: { prompt_tokens: 1, completion_tokens: 1 } }));
  };

test.before(async () => {
  inProcess = await startInProcess(
    `models: [{ name: lower }, { name: higher }, { name: plain }]
router: { admission: { priority_header: true } }
endpoints:
  - { id: l, url: "http://127.0.0.1:9", models: [lower], priority_scheduling: lower-first }
  - { id: h, url: "http://127.0.0.1:9", models: [higher], priority_scheduling: higher-first }
  - { id: p, url: "http://127.0.0.1:9", models: [plain] }
`,
    { l: engine('lower'), h: engine('higher'), p: engine('plain') },
  );
});

test.after(async () => {
  await inProcess.close();
});

async function send(model: string, band: string, extra: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  const body = JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], ...extra });
  const res = await request(`${inProcess.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-llmgw-priority': band }, body });
  assert.is(res.statusCode, 200, await res.body.text());
  return JSON.parse(received[model]!.at(-1)!) as Record<string, unknown>;
}

test('lower-first engines get the band index: platinum 0, bronze 3', async () => {
  assert.is((await send('lower', 'platinum')).priority, 0);
  assert.is((await send('lower', 'gold')).priority, 1);
  assert.is((await send('lower', 'bronze')).priority, 3);
});

test('higher-first engines get it the other way round', async () => {
  assert.is((await send('higher', 'platinum')).priority, 3);
  assert.is((await send('higher', 'bronze')).priority, 0);
});

test("the band decides over a client's own priority where the engine schedules by it", async () => {
  assert.is((await send('lower', 'bronze', { priority: -100 })).priority, 3);
});

test('an engine without a priority policy gets the body as sent', async () => {
  const sent = await send('plain', 'platinum');
  assert.not.ok('priority' in sent);
  assert.is((await send('plain', 'bronze', { priority: 5 })).priority, 5, "a client's own field passes untouched");
});

test.run();
