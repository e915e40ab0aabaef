import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { configSchema, configSchemaJson, parseConfig } from '../../src/config/index.js';
import type { SchemaNode } from '../../src/config/schema.js';

// dist/spec/config/ → the repository root
const SHIPPED = new URL('../../../schema/llmgw.schema.json', import.meta.url);

test('the shipped schema/llmgw.schema.json is exactly the schema the loader uses', () => {
  const shipped = readFileSync(SHIPPED, 'utf8');
  assert.ok(
    shipped === configSchemaJson(),
    'schema/llmgw.schema.json has drifted from src/config/schema.ts; regenerate it with:\n' +
      `  npx tsc -p . && node -e "import('./dist/src/config/schema.js').then(m => process.stdout.write(m.configSchemaJson()))" > schema/llmgw.schema.json`,
  );
  assert.equal(JSON.parse(shipped), configSchema);
});

test('every property has a description, every object refuses unknown keys, every map checks its keys', () => {
  const missing: string[] = [];
  const open: string[] = [];
  const walk = (node: SchemaNode, at: string): void => {
    if (typeof node.description !== 'string' || node.description.length < 8) missing.push(at || '(root)');
    const isMap = typeof node.additionalProperties === 'object' && node.properties === undefined && node.propertyNames !== undefined;
    if (node.type === 'object' && node.additionalProperties !== false && !isMap) open.push(at || '(root)');
    for (const [k, child] of Object.entries(node.properties ?? {})) walk(child, at ? `${at}.${k}` : k);
    if (typeof node.additionalProperties === 'object') walk(node.additionalProperties, `${at}{}`);
    if (node.items) walk(node.items, `${at}[]`);
  };
  walk(configSchema as SchemaNode, '');
  assert.equal(missing, []);
  assert.equal(open, []);
});

test('the schema is a valid draft-07 schema for a plain ajv, as an editor would use it', () => {
  const validate = new Ajv({ strict: true }).compile(JSON.parse(readFileSync(SHIPPED, 'utf8')) as object);
  assert.ok(validate({ listen: '127.0.0.1:4000', models: [{ name: 'm', profiles: [{ name: 'p', gpu_class: 'g', tp: 1 }] }] }));
  assert.not.ok(validate({ models: [{ name: 'm', aliasses: [] }] }));
});

test('the schema is frozen, so no caller can change what later loads validate against', () => {
  assert.ok(Object.isFrozen(configSchema));
  assert.ok(Object.isFrozen(configSchema.properties!.router!.properties!.max_body_bytes));
  // Loading (which fills defaults) leaves it as it was.
  const before = configSchemaJson();
  parseConfig('agent_insecure: true\nmodels: [{ name: m, profiles: [{ name: p, gpu_class: g, tp: 1, env: { A: b } }] }]\n', 'x.yaml', {});
  assert.is(configSchemaJson(), before);
});

test.run();
