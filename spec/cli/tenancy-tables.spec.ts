import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import type { KeyView } from '../../src/admin/tenancy-routes.js';
import { keyState, renderAudit, renderIssuedKey, renderKeys, renderLimits, renderShow, renderUsage } from '../../src/cli/tenancy-tables.js';

const NOW = Date.UTC(2026, 11, 15, 12);
const H = 3_600_000;
const key = (over: Partial<KeyView>): KeyView => ({
  id: 'key_aaaaaaaaaaaaaaaa',
  projectId: 'proj_bbbbbbbbbbbbbbbb',
  name: 'ci',
  prefix: 'sk-llmgw-4f2aC9',
  createdAt: Date.UTC(2026, 11, 1, 8, 30),
  expiresAt: null,
  revokedAt: null,
  lastUsedAt: null,
  ...over,
});

test('a key\'s state says whether it works now and until when', () => {
  assert.is(keyState(key({}), NOW), 'active');
  assert.is(keyState(key({ expiresAt: NOW + 3 * H }), NOW), 'expires in 3h');
  assert.is(keyState(key({ expiresAt: NOW - 2 * 24 * H }), NOW), 'expired 2d ago');
  assert.is(keyState(key({ expiresAt: NOW + H, revokedAt: NOW - 4 * 60_000 }), NOW), 'revoked 4m ago', 'revocation wins over expiry');
});

test('keys: one aligned line each, the prefix marked as cut; a new key\'s text is said to be shown once', () => {
  const out = renderKeys([key({}), key({ id: 'key_c', name: '', lastUsedAt: NOW - 60_000, expiresAt: NOW + 24 * H })], NOW);
  assert.is(
    out,
    [
      'ID                    NAME  PREFIX            PROJECT                STATE          CREATED            LAST USED',
      'key_aaaaaaaaaaaaaaaa  ci    sk-llmgw-4f2aC9…  proj_bbbbbbbbbbbbbbbb  active         2026-12-01 08:30Z  never',
      'key_c                 -     sk-llmgw-4f2aC9…  proj_bbbbbbbbbbbbbbbb  expires in 1d  2026-12-01 08:30Z  1m ago',
      '',
    ].join('\n'),
  );
  const issued = renderIssuedKey({ key: 'sk-llmgw-4f2aC9secret', record: key({}) }, NOW);
  assert.match(issued, /\nkey: sk-llmgw-4f2aC9secret\nthis key is shown only once: store it now \(llmgw keeps only its hash\)\n$/);
  assert.is(renderKeys([], NOW), 'no keys\n');
});

test('limits: a level per line, - where unset, a budget with its period, all models when unrestricted', () => {
  const out = renderLimits([
    { scope: 'org', scopeId: 'org_1', rpm: 600, tpm: null, budget: 100, period: 'month', models: null, band: null, profile: null },
    { scope: 'key', scopeId: 'key_1', rpm: null, tpm: 5000, budget: null, period: null, models: ['a', 'b'], band: 'batch', profile: 'cache' },
  ]);
  assert.is(out, ['SCOPE  ID     RPM  TPM   BUDGET     MODELS  BAND   PROFILE', 'org    org_1  600  -     100/month  all     -      -', 'key    key_1  -    5000  -          a,b     batch  cache', ''].join('\n'));
});

test('show: the entity\'s fields, then its limits or that none are set', () => {
  const out = renderShow('key', { entity: key({ revokedAt: NOW - H }), limits: null }, NOW);
  assert.is(out, ['id:        key_aaaaaaaaaaaaaaaa', 'name:      ci', 'project:   proj_bbbbbbbbbbbbbbbb', 'prefix:    sk-llmgw-4f2aC9…', 'state:     revoked 1h ago', 'last used: never', 'created:   2026-12-01 08:30Z', '', 'no limits set on this key', ''].join('\n'));
});

test('usage: a line per group under the grouping\'s name, and a total', () => {
  const row = { requests: 3, promptTokens: 30, completionTokens: 12, cachedTokens: 8, units: 0.25, errors: 1 };
  const out = renderUsage([{ id: 'llama', name: null, ...row }, { id: 'qwen', name: null, ...row, units: 2 }], 'model');
  assert.is(
    out,
    [
      'MODEL  NAME  REQUESTS  PROMPT  COMPLETION  CACHED  UNITS   ERRORS',
      'llama  -     3         30      12          8       0.2500  1',
      'qwen   -     3         30      12          8       2       1',
      'total        6         60      24          16      2.2500  2',
      '',
    ].join('\n'),
  );
  assert.is(renderUsage([], 'key'), 'no usage in this window\n');
});

test('audit: when, who, what, on which entity and the detail', () => {
  const out = renderAudit([{ id: 1, at: Date.UTC(2026, 11, 1, 9), actor: 'ops@bastion', action: 'key.revoke', targetKind: 'key', targetId: 'key_1', detail: { reason: 'leaked' } }]);
  assert.is(out, ['AT                 ACTOR        ACTION      TARGET     DETAIL', '2026-12-01 09:00Z  ops@bastion  key.revoke  key key_1  {"reason":"leaked"}', ''].join('\n'));
});

test.run();
