import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import sqlite from 'node-sqlite3-wasm';
import * as assert from 'uvu/assert';
import { LlmgwError, type ErrorCode } from '../../src/errors.js';
import { hashKey } from '../../src/tenancy/keys.js';
import { SCHEMA_VERSION } from '../../src/tenancy/store/migrations.js';
import { SqliteStore } from '../../src/tenancy/store/sqlite-store.js';
import { suite } from '../support/uvu.js';
import { clock, tempDir } from './helpers.js';

const test = suite('the SQLite tenancy store: migrations, the tree, keys, limits and audit');

function fails(fn: () => unknown, code: ErrorCode, message: RegExp): LlmgwError {
  try {
    fn();
  } catch (err) {
    assert.instance(err, LlmgwError);
    assert.is((err as LlmgwError).code, code, (err as Error).message);
    assert.match((err as Error).message, message);
    return err as LlmgwError;
  }
  throw new Error(`expected ${code}`);
}

/** The file as another program sees it; WAL without shared memory needs the exclusive lock first. */
function rawOpen(path: string): InstanceType<typeof sqlite.Database> {
  const db = new sqlite.Database(path);
  db.exec('PRAGMA locking_mode=EXCLUSIVE');
  return db;
}

function withStore(body: (store: SqliteStore, c: ReturnType<typeof clock>, path: string) => void): void {
  const t = tempDir();
  const c = clock();
  const path = join(t.dir, 'tenancy.db');
  const store = SqliteStore.open(path, { now: c.now });
  try {
    body(store, c, path);
  } finally {
    store.close();
    t.remove();
  }
}

test('a fresh store is created with its folder, migrated to the current version, and keeps its data across a reopen', () => {
  const t = tempDir();
  try {
    const path = join(t.dir, 'a', 'b', 'tenancy.db');
    const first = SqliteStore.open(path);
    const { org } = first.createOrg('acme', 'ops');
    first.close();
    const again = SqliteStore.open(path);
    assert.equal(again.snapshot().orgs, [org]);
    again.close();
    const db = rawOpen(path);
    assert.equal(db.all('SELECT version FROM schema_version ORDER BY version').map((r) => r.version), Array.from({ length: SCHEMA_VERSION }, (_, i) => i + 1));
    db.close();
  } finally {
    t.remove();
  }
});

test('a store written by a newer llmgw is refused with its path and both versions', () => {
  const t = tempDir();
  try {
    const path = join(t.dir, 'tenancy.db');
    SqliteStore.open(path).close();
    const db = rawOpen(path);
    db.run('INSERT INTO schema_version (version) VALUES (?)', [SCHEMA_VERSION + 1]);
    db.close();
    const err = fails(() => SqliteStore.open(path), 'LLMGW_STORE_FAILED', new RegExp(`${path}.*version ${SCHEMA_VERSION + 1}, newer than this llmgw knows \\(${SCHEMA_VERSION}\\)`));
    assert.is(err.details?.path, path);
  } finally {
    t.remove();
  }
});

test('a store that cannot be opened fails with LLMGW_STORE_FAILED naming the path', () => {
  const t = tempDir();
  try {
    const path = join(t.dir, 'is-a-folder');
    mkdirSync(path);
    fails(() => SqliteStore.open(path), 'LLMGW_STORE_FAILED', new RegExp(`cannot open the tenancy store ${path}`));
  } finally {
    t.remove();
  }
});

test('a store another process holds is refused at open, not shared', () => {
  withStore((_store, _c, path) => {
    fails(() => SqliteStore.open(path), 'LLMGW_STORE_FAILED', new RegExp(path));
  });
});

test('the tree is built by name or id; names are unique under their parent only', () => {
  withStore((s) => {
    const { org, change } = s.createOrg('acme', 'ops');
    assert.match(org.id, /^org_/);
    assert.equal(change, { orgs: [org] });
    const { team } = s.createTeam('ml', 'acme', 'ops');
    assert.is(team.orgId, org.id);
    const { project } = s.createProject('search', team.id, 'ops');
    assert.is(project.teamId, team.id);
    fails(() => s.createOrg('acme', 'ops'), 'LLMGW_ENTITY_CONFLICT', new RegExp(`organization named 'acme' already exists \\(${org.id}\\)`));
    fails(() => s.createTeam('ml', org.id, 'ops'), 'LLMGW_ENTITY_CONFLICT', /team named 'ml' already exists in organization/);
    const other = s.createOrg('globex', 'ops').org;
    const { team: ml2 } = s.createTeam('ml', 'globex', 'ops');
    assert.is(ml2.orgId, other.id);
    assert.equal(s.list('team', 'acme'), [team]);
    assert.equal(s.list('team', null).map((t) => t.id).sort(), [team.id, ml2.id].sort());
    assert.equal(s.show('project', 'search').entity, project);
  });
});

test('an ambiguous name lists the ids it matches; an unknown one says what was looked for', () => {
  withStore((s) => {
    s.createOrg('acme', 'ops');
    s.createOrg('globex', 'ops');
    const a = s.createTeam('ml', 'acme', 'ops').team;
    const b = s.createTeam('ml', 'globex', 'ops').team;
    const err = fails(() => s.createProject('p', 'ml', 'ops'), 'LLMGW_ENTITY_CONFLICT', /the name 'ml' matches 2 teams/);
    assert.equal(err.details?.ids, [a.id, b.id].sort());
    assert.is(s.createProject('p', b.id, 'ops').project.teamId, b.id);
    fails(() => s.createTeam('x', 'initech', 'ops'), 'LLMGW_ENTITY_NOT_FOUND', /no organization has the id or name 'initech'/);
    fails(() => s.revokeKey('key_0000000000000000', 'ops'), 'LLMGW_ENTITY_NOT_FOUND', /no key/);
    fails(() => s.show('project', 'nope'), 'LLMGW_ENTITY_NOT_FOUND', /no project/);
  });
});

test('a created key is returned once in full and stored only as its hash and display prefix', () => {
  withStore((s, c) => {
    s.createOrg('o', 'ops');
    s.createTeam('t', 'o', 'ops');
    const { project } = s.createProject('p', 't', 'ops');
    const { issued, change } = s.createKey('p', 'ci', c.now() + 1000, 'ops');
    assert.is(issued.record.hash, hashKey(issued.key));
    assert.is(issued.record.projectId, project.id);
    assert.is(issued.record.expiresAt, c.now() + 1000);
    assert.ok(issued.key.startsWith(issued.record.prefix));
    assert.equal(change, { keys: [issued.record] });
    assert.equal(s.snapshot().keys, [issued.record]);
    assert.not.ok(JSON.stringify(s.snapshot()).includes(issued.key), 'the key text is nowhere in the store');
  });
});

test('revocation is soft and keeps the first time; a revoked key cannot be rotated', () => {
  withStore((s, c) => {
    s.createOrg('o', 'ops');
    s.createTeam('t', 'o', 'ops');
    s.createProject('p', 't', 'ops');
    const { issued } = s.createKey('p', 'ci', null, 'ops');
    const first = c.now();
    const { key, change } = s.revokeKey(issued.record.id, 'ops');
    assert.is(key.revokedAt, first);
    assert.equal(change, { keys: [key] });
    c.advance(5_000);
    assert.is(s.revokeKey('ci', 'ops').key.revokedAt, first);
    assert.is(s.snapshot().keys.length, 1);
    fails(() => s.rotateKey(key.id, 1000, 'ops'), 'LLMGW_ENTITY_CONFLICT', /is revoked/);
  });
});

test('rotation issues a key for the same project, name and key limits; the old one expires after the grace', () => {
  withStore((s, c) => {
    s.createOrg('o', 'ops');
    s.createTeam('t', 'o', 'ops');
    s.createProject('p', 't', 'ops');
    const old = s.createKey('p', 'ci', null, 'ops').issued;
    s.setLimits('key', old.record.id, { rpm: 60, models: ['llama'] }, false, 'ops');
    c.advance(1_000);
    const { issued, old: after, change } = s.rotateKey(old.record.id, 60_000, 'ops');
    assert.is.not(issued.key, old.key);
    assert.is(issued.record.projectId, old.record.projectId);
    assert.is(issued.record.name, 'ci');
    assert.is(issued.record.expiresAt, null);
    assert.is(after.expiresAt, c.now() + 60_000);
    assert.equal(change.keys, [issued.record, after]);
    assert.equal(s.limits('key', issued.record.id), [{ scope: 'key', scopeId: issued.record.id, rpm: 60, tpm: null, budget: null, period: null, models: ['llama'], band: null, profile: null }]);
    assert.equal(change.limits, s.limits('key', issued.record.id));
    // The old key never gains time: a second rotation with a longer grace keeps the earlier end.
    const again = s.rotateKey(old.record.id, 3_600_000, 'ops');
    assert.is(again.old.expiresAt, c.now() + 60_000);
    // Both new keys share the name, so the name alone no longer says which one.
    fails(() => s.revokeKey('ci', 'ops'), 'LLMGW_ENTITY_CONFLICT', /matches 3 keys/);
  });
});

test('rotating a key with an expiry gives the new key the same lifetime from now', () => {
  withStore((s, c) => {
    s.createOrg('o', 'ops');
    s.createTeam('t', 'o', 'ops');
    s.createProject('p', 't', 'ops');
    const old = s.createKey('p', 'ci', c.now() + 10_000, 'ops').issued;
    c.advance(4_000);
    const { issued, old: after } = s.rotateKey(old.record.id, 60_000, 'ops');
    assert.is(issued.record.expiresAt, c.now() + 10_000);
    assert.is(after.expiresAt, old.record.expiresAt, 'a grace past the old expiry does not extend it');
    c.advance(7_000);
    fails(() => s.rotateKey(old.record.id, 1, 'ops'), 'LLMGW_ENTITY_CONFLICT', /has expired/);
  });
});

test('limits are set field by field: absent keeps, null clears, clear drops the row', () => {
  withStore((s) => {
    const { org } = s.createOrg('o', 'ops');
    const first = s.setLimits('org', 'o', { rpm: 100, budget: 50, period: 'day' }, false, 'ops');
    assert.equal(first.row, { scope: 'org', scopeId: org.id, rpm: 100, tpm: null, budget: 50, period: 'day', models: null, band: null, profile: null });
    assert.equal(first.change, { limits: [first.row!] });
    const second = s.setLimits('org', org.id, { tpm: 1000, rpm: null, band: 'batch' }, false, 'ops');
    assert.equal(second.row, { scope: 'org', scopeId: org.id, rpm: null, tpm: 1000, budget: 50, period: 'day', models: null, band: 'batch', profile: null });
    assert.equal(s.show('org', 'o').limits, second.row);
    fails(() => s.setLimits('org', 'o', { period: null }, false, 'ops'), 'LLMGW_INVALID_REQUEST', /budget needs a period/);
    fails(() => s.setLimits('org', 'o', { rpm: 1.5 }, false, 'ops'), 'LLMGW_INVALID_REQUEST', /rpm must be a positive integer/);
    assert.equal(s.limits('org', 'o'), [second.row!], 'a refused update changed nothing');
    const cleared = s.setLimits('org', 'o', {}, true, 'ops');
    assert.equal(cleared, { row: null, change: { clearedLimits: [{ scope: 'org', scopeId: org.id }] } });
    assert.equal(s.limits(null, null), []);
  });
});

test('every mutation writes one audit event, newest first, and none holds a key', () => {
  withStore((s, c) => {
    s.createOrg('o', 'alice');
    s.createTeam('t', 'o', 'alice');
    s.createProject('p', 't', 'alice');
    const { issued } = s.createKey('p', 'ci', null, 'bob');
    s.setLimits('project', 'p', { rpm: 5 }, false, 'bob');
    c.advance(10);
    const rotated = s.rotateKey(issued.record.id, 1000, 'bob');
    s.revokeKey(rotated.issued.record.id, 'carol');
    s.setLimits('project', 'p', {}, true, 'carol');
    // A refused mutation leaves no event.
    try {
      s.createOrg('o', 'mallory');
    } catch {}
    const events = s.audit(100, null);
    assert.equal(events.map((e) => [e.actor, e.action]), [
      ['carol', 'limits.clear'],
      ['carol', 'key.revoke'],
      ['bob', 'key.rotate'],
      ['bob', 'limits.set'],
      ['bob', 'key.create'],
      ['alice', 'project.create'],
      ['alice', 'team.create'],
      ['alice', 'org.create'],
    ]);
    assert.equal(events[3]!.detail, { rpm: 5 });
    assert.is(events[2]!.targetId, issued.record.id);
    const text = JSON.stringify(events);
    for (const secret of [issued.key, rotated.issued.key, issued.record.hash]) assert.not.ok(text.includes(secret));
    assert.equal(s.audit(2, null).map((e) => e.action), ['limits.clear', 'key.revoke']);
    assert.equal(s.audit(100, c.now()).map((e) => e.action), ['limits.clear', 'key.revoke', 'key.rotate']);
  });
});

test.run();
