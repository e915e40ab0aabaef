import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { EndpointTable } from '../../src/router/endpoint-table.js';
import { HEALTH } from './helpers.js';

const spec = (id: string, port: number, models = ['m']) => ({ id, url: `http://127.0.0.1:${port}`, models, weight: 1, priority: 0, pool: null });

test('an update keeps the live state of surviving endpoints, drains removed ones and adds new ones', async () => {
  const table = new EndpointTable({ connectTimeoutMs: 1_000, health: HEALTH });
  const a = table.add(spec('a', 1));
  const b = table.add(spec('b', 2));
  a.inflight = 3;
  a.ready = true;
  for (let i = 0; i < 5; i++) a.health.failed(0);
  const result = table.update([{ ...spec('a', 1, ['m', 'n']), weight: 2 }, spec('c', 3)]);
  assert.equal(result, { added: ['c'], removed: ['b'] });
  assert.is(table.get('a'), a, 'the same state object');
  assert.is(a.inflight, 3);
  assert.is(a.ready, true);
  assert.is(a.health.breakerAt(0), 'open');
  assert.is(a.weight, 2);
  assert.equal(table.forModel('n').map((e) => e.id), ['a']);
  assert.equal(table.forModel('m').map((e) => e.id), ['a', 'c']);
  assert.is(b.draining, true, 'a request still holding it sees it draining');
  assert.is(table.get('b'), undefined);
  await table.close();
});

test('an endpoint whose URL changed is a new endpoint: its old state does not carry over', async () => {
  const table = new EndpointTable({ connectTimeoutMs: 1_000, health: HEALTH });
  const old = table.add(spec('a', 1));
  old.inflight = 2;
  assert.equal(table.update([spec('a', 9)]), { added: ['a'], removed: ['a'] });
  assert.is.not(table.get('a'), old);
  assert.is(table.get('a')!.inflight, 0);
  await table.close();
});

test.run();
