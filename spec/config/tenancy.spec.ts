// The tenancy section and the keys it prices with: a model's units and an endpoint's
// GPUs. Each bad value is refused with the file, the path and the reason.
import { dirname, join } from 'node:path';
import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { loadConfig, parseConfig } from '../../src/config/index.js';
import { BASE, problems, tempFile } from './helpers.js';

/** BASE with llama-3.1-8b given these extra lines (4 spaces deep). */
const withUnits = (yaml: string): string => BASE.replace('    fallbacks: [llama-3.3-70b]\n', `    fallbacks: [llama-3.3-70b]\n    units: ${yaml}\n`);

test('the store is found beside the config file, wherever the server was started from', () => {
  const path = tempFile('llmgw.yaml', `${BASE}tenancy: { store: tenancy.db }\n`);
  const c = loadConfig({ path, env: {} });
  assert.equal(c.tenancy, { store: join(dirname(path), 'tenancy.db'), hard_budgets: false, retention_days: 30 });
  const absolute = loadConfig({ path: tempFile('llmgw.yaml', `${BASE}tenancy: { store: /var/lib/llmgw/t.db }\n`), env: {} });
  assert.is(absolute.tenancy!.store, '/var/lib/llmgw/t.db');
});

test('a tenancy section needs its store', () => {
  assert.equal(problems(`${BASE}tenancy: { hard_budgets: true }\n`), ['llmgw.yaml: tenancy.store: is required']);
  assert.equal(problems(`${BASE}tenancy: { store: "" }\n`), ['llmgw.yaml: tenancy.store: must not be empty']);
});

test('the budget fallback must be a catalog model, by name or alias', () => {
  assert.equal(problems(`${BASE}tenancy: { store: t.db, budget_fallback: llama-3.1-9b }\n`), [
    "llmgw.yaml: tenancy.budget_fallback: 'llama-3.1-9b' is not a model in the catalog (did you mean 'llama-3.1-8b'?)",
  ]);
  assert.is(parseConfig(`${BASE}tenancy: { store: t.db, budget_fallback: llama }\n`, 'llmgw.yaml', {}).tenancy!.budget_fallback, 'llama');
});

test('retention is at least a day', () => {
  assert.equal(problems(`${BASE}tenancy: { store: t.db, retention_days: 0 }\n`), ['llmgw.yaml: tenancy.retention_days: must be ≥ 1']);
});

test('units are tokens by default, or gpu_seconds, or a price per million tokens of each kind', () => {
  assert.is(parseConfig(BASE, 'llmgw.yaml', {}).models[0]!.units, 'tokens');
  assert.is(parseConfig(withUnits('gpu_seconds'), 'llmgw.yaml', {}).models[0]!.units, 'gpu_seconds');
  assert.equal(parseConfig(withUnits('{ per_million: { prompt: 1, completion: 2, cached: 0 } }'), 'llmgw.yaml', {}).models[0]!.units, {
    per_million: { prompt: 1, completion: 2, cached: 0 },
  });
});

test('bad units are refused with the shapes they may take', () => {
  const shapes = 'must be tokens or gpu_seconds, or { per_million: { prompt, completion, cached } }';
  assert.equal(problems(withUnits('dollars')), [`llmgw.yaml: models[0].units: ${shapes}, got "dollars"`]);
  assert.equal(problems(withUnits('{ per_million: { prompt: 1, completion: 2 } }')), [`llmgw.yaml: models[0].units: ${shapes}, got {"per_million":{"prompt":1,"completion":2}}`]);
  assert.equal(problems(withUnits('{ per_million: { prompt: -1, completion: 2, cached: 0 } }')), [
    `llmgw.yaml: models[0].units: ${shapes}, got {"per_million":{"prompt":-1,"completion":2,"cached":0}}`,
  ]);
});

test("an endpoint's GPUs default to 1 and are a positive count", () => {
  assert.is(parseConfig(BASE, 'llmgw.yaml', {}).endpoints[0]!.gpus, 1);
  assert.equal(problems(BASE.replace('    models: [llama-3.1-8b, llama-3.3-70b]\n', '    models: [llama-3.1-8b, llama-3.3-70b]\n    gpus: 0\n')), ['llmgw.yaml: endpoints[0].gpus: must be ≥ 1']);
});

test.run();
