// The main thread's directory: a key authenticates by its hash alone, with the reason
// it does not, and its cached view follows every change.
import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { Directory, type KeyView } from '../../src/tenancy/directory.js';
import { keyRecord, limitRow, oneProject } from './fixtures.js';

const BANDS = ['platinum', 'gold', 'silver', 'bronze'];

test('a known key resolves to its chain; an unknown one is refused as unknown', () => {
  const d = new Directory(oneProject(['key_1']), BANDS);
  const v = d.authenticate('sk-llmgw-key_1', 0) as KeyView;
  assert.equal([v.key.id, v.project.id, v.team.id, v.org.id], ['key_1', 'proj_a', 'team_a', 'org_a']);
  assert.is(d.authenticate('sk-llmgw-key_2', 0), 'unknown');
  assert.is(d.authenticate('', 0), 'unknown');
});

test('a revoked key and an expired key are refused with their reason, from the moment they stop working', () => {
  const snap = oneProject([]);
  snap.keys = [keyRecord('key_r', 'proj_a', 'sk-llmgw-r', { revokedAt: 1_000 }), keyRecord('key_e', 'proj_a', 'sk-llmgw-e', { expiresAt: 2_000 })];
  const d = new Directory(snap, BANDS);
  assert.is((d.authenticate('sk-llmgw-r', 999) as KeyView).key.id, 'key_r');
  assert.is(d.authenticate('sk-llmgw-r', 1_000), 'revoked');
  assert.is((d.authenticate('sk-llmgw-e', 1_999) as KeyView).key.id, 'key_e', 'a rotated key works through its grace');
  assert.is(d.authenticate('sk-llmgw-e', 2_000), 'expired');
});

test('a change reaches the next request: a revocation, new limits, a cleared level', () => {
  const d = new Directory(oneProject(['key_1'], [limitRow('team', 'team_a', { rpm: 10 })]), BANDS);
  assert.is((d.authenticate('sk-llmgw-key_1', 0) as KeyView).limits.rpm, 10);
  d.apply({ limits: [limitRow('key', 'key_1', { rpm: 3 })] });
  assert.is((d.authenticate('sk-llmgw-key_1', 0) as KeyView).limits.rpm, 3);
  d.apply({ clearedLimits: [{ scope: 'key', scopeId: 'key_1' }, { scope: 'team', scopeId: 'team_a' }] });
  assert.is((d.authenticate('sk-llmgw-key_1', 0) as KeyView).limits.rpm, null);
  d.apply({ keys: [keyRecord('key_1', 'proj_a', 'sk-llmgw-key_1', { revokedAt: 5 })] });
  assert.is(d.authenticate('sk-llmgw-key_1', 10), 'revoked');
});

test('a key created after the snapshot works once its change is applied, with its chain', () => {
  const d = new Directory(oneProject([]), BANDS);
  assert.is(d.authenticate('sk-llmgw-new', 0), 'unknown');
  d.apply({ keys: [keyRecord('key_n', 'proj_a', 'sk-llmgw-new')] });
  assert.is((d.authenticate('sk-llmgw-new', 0) as KeyView).key.id, 'key_n');
  assert.equal(d.chainOf('key_n'), ['key_n', 'proj_a', 'team_a', 'org_a']);
  assert.is(d.chainOf('key_x'), null);
});

test.run();
