import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { auditQuery, createKeyBody, limitsBody, rotateKeyBody, usageQuery } from '../../src/admin/tenancy-bodies.js';

const NOW = Date.UTC(2026, 11, 15, 12);

test('a usage query reads by, since, until and of; by defaults to key', () => {
  assert.equal(usageQuery(new URLSearchParams('by=project&since=2026-12-01&until=2026-12-02T00:00Z&of=team:ml'), NOW), {
    by: 'project',
    since: Date.UTC(2026, 11, 1),
    until: Date.UTC(2026, 11, 2),
    of: { scope: 'team', ref: 'ml' },
  });
  assert.equal(usageQuery(new URLSearchParams('since=24h&of=key:key_a:b'), NOW), { by: 'key', since: NOW - 86_400_000, until: null, of: { scope: 'key', ref: 'key_a:b' } });
  assert.equal(usageQuery(new URLSearchParams(''), NOW), { by: 'key', since: null, until: null, of: null });
});

test('an audit query defaults to the last 100 events', () => {
  assert.equal(auditQuery(new URLSearchParams(''), NOW), { limit: 100, since: null });
  assert.equal(auditQuery(new URLSearchParams('limit=5&since=1h'), NOW), { limit: 5, since: NOW - 3_600_000 });
});

test('a key expires a span from now, or never; a rotation keeps the old key 24h unless told', () => {
  assert.equal(createKeyBody({ project: 'chat' }, NOW), { project: 'chat', name: '', expiresAt: null });
  assert.equal(createKeyBody({ project: 'chat', name: 'ci', expiresIn: '30d' }, NOW), { project: 'chat', name: 'ci', expiresAt: NOW + 30 * 86_400_000 });
  assert.throws(() => createKeyBody({ project: 'chat', expiresIn: '0s' }, NOW), /'expiresIn' must be longer than 0/);
  assert.equal(rotateKeyBody({}), { graceMs: 86_400_000 });
  assert.equal(rotateKeyBody({ grace: '0s' }), { graceMs: 0 });
});

test('a limits set keeps absent fields absent, and clears the period with its budget', () => {
  assert.equal(limitsBody({ rpm: 0 }), { rpm: 0 });
  assert.equal(limitsBody({ budget: null }), { budget: null, period: null });
  assert.equal(limitsBody({ budget: 2.5, period: 'day', models: null, band: 'batch', profile: null }), { budget: 2.5, period: 'day', models: null, band: 'batch', profile: null });
});

test.run();
