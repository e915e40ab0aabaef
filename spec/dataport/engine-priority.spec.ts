// Priority reaches the engine: where the config says an engine orders its queue by the
// request's `priority` field, the admission band is sent in it, in the engine's order;
// elsewhere the body goes as the client sent it.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import * as assert from 'uvu/assert';
import { parseConfig } from '../../src/config/index.js';
import { createDataPort, type DataPort } from '../../src/dataport/data-port.js';
import { Admission } from '../../src/router/admission/admission.js';
import { Catalog } from '../../src/router/catalog.js';
import { EndpointTable, type EnginePriority } from '../../src/router/endpoint-table.js';
import { PrefixIndex } from '../../src/router/scheduler/prefix-index.js';
import { buildProfiles } from '../../src/router/scheduler/profiles.js';
import { Scheduler } from '../../src/router/scheduler/scheduler.js';
import { createScorers } from '../../src/router/scheduler/scorers.js';
import { hashPrefix } from '../../src/tasks/prefix-hash.js';
import { HEALTH } from '../router/helpers.js';
import { suite } from '../support/uvu.js';

const test = suite('the admission band reaches engines that schedule by priority');

const engines: Server[] = [];
/** Raw bodies each engine received, by model. */
const received: Record<string, string[]> = { lower: [], higher: [], plain: [] };
let port: DataPort;
let url: string;

async function engine(model: string): Promise<string> {
  const s = createServer((req, res) => {
    let raw = '';
    req.on('data', (d: Buffer) => (raw += d.toString()));
    req.on('end', () => {
      received[model]!.push(raw);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 'x', object: 'chat.completion', model, choices: [], usage: { prompt_tokens: 1, completion_tokens: 1 } }));
    });
  });
  engines.push(s);
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
}

test.before(async () => {
  const config = parseConfig(
    `models: [{ name: lower }, { name: higher }, { name: plain }]
router: { admission: { priority_header: true } }
endpoints:
  - { id: l, url: "http://127.0.0.1:9", models: [lower], priority_scheduling: lower-first }
  - { id: h, url: "http://127.0.0.1:9", models: [higher], priority_scheduling: higher-first }
  - { id: p, url: "http://127.0.0.1:9", models: [plain] }
`,
    'priority.yaml',
    {},
  );
  const table = new EndpointTable({ connectTimeoutMs: 1_000, health: HEALTH });
  for (const e of config.endpoints) {
    const state = table.add({ id: e.id, url: await engine(e.models[0]!), models: e.models, weight: 1, priority: 0, pool: null, enginePriority: (e.priority_scheduling ?? null) as EnginePriority | null });
    state.ready = true;
  }
  const prefixIndex = new PrefixIndex(100);
  port = createDataPort({
    catalog: new Catalog(config.models),
    table,
    scheduler: new Scheduler(),
    profiles: buildProfiles([], createScorers({ staleAfterMs: 5_000, kvCeiling: 0.9, prefixIndex })),
    modelProfiles: new Map(),
    prefixIndex,
    router: config.router,
    cpu: { run: <R>(_task: string, data: unknown) => Promise.resolve(hashPrefix(data as Parameters<typeof hashPrefix>[0]) as R) },
    usage: () => {},
    admissions: new Map(config.models.map((m) => [m.name, new Admission(m.name, table, config.router.admission, config.router.stale_after_ms)])),
  });
  await new Promise<void>((resolve) => port.server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(port.server.address() as AddressInfo).port}`;
});

test.after(async () => {
  await new Promise((resolve) => port.server.close(resolve));
  await Promise.all(engines.map((s) => new Promise((resolve) => s.close(resolve))));
});

async function send(model: string, band: string, extra: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  const body = JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], ...extra });
  const res = await request(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-llmgw-priority': band }, body });
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
