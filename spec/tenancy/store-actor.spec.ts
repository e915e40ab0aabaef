import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import { storeActor } from '../../src/actors/tenancy/store-actor.js';
import { LlmgwError } from '../../src/errors.js';
import type { Outcome } from '../../src/messages/agent.js';
import { TENANCY_STORE } from '../../src/messages/tenancy.js';
import { ActorSystem } from '../../src/runtime/index.js';
import { journalDirOf } from '../../src/tenancy/journal-segments.js';
import { until } from '../support/until.js';
import { counter, counterAt } from '../runtime/fixtures/actors.js';
import { suite } from '../support/uvu.js';
import { billed, journal, storedIds, tempDir } from './helpers.js';

const test = suite('the tenancy store actor on its own thread');

/** An Outcome's value; a refusal fails the spec with its error. */
function value<T>(o: Outcome<T>): T {
  if (!o.ok) throw LlmgwError.deserialize(o.error);
  return o.value;
}

test('it serves the protocol from the tenancy thread, counts the journal written before it started, and drains on stop', async () => {
  const t = tempDir();
  const path = join(t.dir, 'store', 'tenancy.db');
  const dir = journalDirOf(path);
  const system = await ActorSystem.start({ threads: [{ name: 'tenancy' }] });
  let stopped = false;
  try {
    let ref = await system.spawn(storeActor, { address: TENANCY_STORE, thread: 'tenancy', args: { path, journalDir: dir, retentionDays: 30 } });
    const { org } = value(await ref.ask({ type: 'create-org', name: 'acme', actor: 'ops' }));
    value(await ref.ask({ type: 'create-team', name: 'ml', org: 'acme', actor: 'ops' }));
    const { project } = value(await ref.ask({ type: 'create-project', name: 'search', team: 'ml', actor: 'ops' }));
    const { issued } = value(await ref.ask({ type: 'create-key', project: 'search', name: 'ci', expiresAt: null, actor: 'ops' }));
    const chain = { keyId: issued.record.id, projectId: project.id, teamId: project.teamId, orgId: org.id };

    // The data port appends; a flush (and a usage query) sees every line written before it.
    const now = Date.now();
    journal(dir, 1, [billed('a', { ...chain, at: now, units: 2 }), billed('b', { ...chain, at: now, units: 3 })]);
    // (The writer's poll may have read them already: flush reports what it drained itself.)
    assert.ok((await ref.ask({ type: 'flush' })).records <= 2);
    assert.is((await ref.ask({ type: 'snapshot' })).spend[0]?.day, 5, 'flushed lines count in spend');
    journal(dir, 1, [billed('c', { ...chain, at: now, units: 4 })]);
    const usage = value(await ref.ask({ type: 'usage', query: { by: 'project', since: null, until: null, of: null } }));
    assert.equal(usage.map((r) => [r.id, r.name, r.requests, r.promptTokens, r.completionTokens, r.units]), [[project.id, 'search', 3, 30, 60, 9]]);
    // Without asking, the writer's own poll picks a line up.
    journal(dir, 1, [billed('d', { ...chain, at: now, units: 1 })]);
    await until(async () => (await ref.ask({ type: 'snapshot' })).spend[0]?.day === 10, 'the polled line counted in spend');
    assert.equal((await ref.ask({ type: 'audit', limit: 10, since: null })).map((e) => e.action), ['key.create', 'project.create', 'team.create', 'org.create']);

    // A restart of the server: lines journaled while it was down count before the first answer.
    journal(dir, 2, [billed('e', { ...chain, at: now, units: 5 })]);
    await system.stop('tenancy-store');
    journal(dir, 3, [billed('f', { ...chain, at: now, units: 6 })]);
    ref = await system.spawn(storeActor, { address: TENANCY_STORE, thread: 'tenancy', args: { path, journalDir: dir, retentionDays: 30 } });
    const snap = await ref.ask({ type: 'snapshot' });
    assert.is(snap.spend.find((s) => s.keyId === issued.record.id)?.day, 21);
    assert.equal(snap.orgs, [org]);

    journal(dir, 3, [billed('g', { ...chain, at: now })]);
    await system.shutdown();
    stopped = true;
    assert.equal(storedIds(path).sort(), ['a', 'b', 'c', 'd', 'e', 'f', 'g'], 'stop drains what was journaled, once');
  } finally {
    if (!stopped) await system.shutdown();
    t.remove();
  }
});

test('raw usage past retention is deleted when the store opens; what it added up to stays', async () => {
  const t = tempDir();
  const path = join(t.dir, 'tenancy.db');
  const dir = journalDirOf(path);
  const system = await ActorSystem.start({ threads: [{ name: 'tenancy' }] });
  try {
    const day = 86_400_000;
    journal(dir, 1, [billed('old', { at: Date.now() - 40 * day }), billed('recent', { at: Date.now() - 20 * day })]);
    const ref = await system.spawn(storeActor, { address: TENANCY_STORE, thread: 'tenancy', args: { path, journalDir: dir, retentionDays: 30 } });
    const total = value(await ref.ask({ type: 'usage', query: { by: 'model', since: null, until: null, of: null } }));
    assert.equal(total.map((r) => r.requests), [2], 'the rollups keep both');
    await system.shutdown();
    assert.equal(storedIds(path), ['recent']);
  } finally {
    await system.shutdown();
    t.remove();
  }
});

test("a caller's mistakes are refused as answers: the store neither crashes nor restarts, however many", async () => {
  const t = tempDir();
  const path = join(t.dir, 'tenancy.db');
  const system = await ActorSystem.start({ threads: [{ name: 'tenancy' }] });
  try {
    const ref = await system.spawn(storeActor, { address: TENANCY_STORE, thread: 'tenancy', args: { path, journalDir: journalDirOf(path), retentionDays: 30 } });
    value(await ref.ask({ type: 'create-org', name: 'acme', actor: 'ops' }));
    for (let i = 0; i < 10; i++) {
      const taken = await ref.ask({ type: 'create-org', name: 'acme', actor: 'ops' });
      assert.equal(taken.ok ? null : taken.error.code, 'LLMGW_ENTITY_CONFLICT');
      const missing = await ref.ask({ type: 'show', kind: 'team', ref: 'nope' });
      assert.equal(missing.ok ? null : [missing.error.code, missing.error.message], ['LLMGW_ENTITY_NOT_FOUND', "no team has the id or name 'nope'"]);
    }
    const stats = (await system.stats()).find((s) => s.name === 'tenancy-store')!;
    assert.is(stats.failures, 0);
    assert.is(stats.restarts, 0);
    assert.is(value(await ref.ask({ type: 'list', kind: 'org', parent: null })).length, 1);
  } finally {
    await system.shutdown();
    t.remove();
  }
});

test('a store that cannot be opened fails the actor with LLMGW_STORE_FAILED and its path, up to the system', async () => {
  const t = tempDir();
  const path = join(t.dir, 'a-folder');
  mkdirSync(path);
  const fatal: LlmgwError[] = [];
  const system = await ActorSystem.start({ threads: [{ name: 'tenancy' }], onFatal: (e) => fatal.push(e) });
  try {
    await system.spawn(storeActor, { address: TENANCY_STORE, thread: 'tenancy', args: { path, journalDir: journalDirOf(path), retentionDays: 30 } });
    await until(() => fatal.length > 0, 'the failure escalated');
    const error = fatal[0]!.details?.error as { code: string; message: string };
    assert.is(error.code, 'LLMGW_STORE_FAILED');
    assert.match(error.message, new RegExp(`cannot open the tenancy store ${path}`));
  } finally {
    await system.shutdown();
    t.remove();
  }
});

test('a tenancy thread that dies holding the store is started again and reopens it: its own lock is taken over', async () => {
  const t = tempDir();
  const path = join(t.dir, 'tenancy.db');
  const system = await ActorSystem.start({ threads: [{ name: 'tenancy', onDeath: 'respawn' }] });
  try {
    const ref = await system.spawn(storeActor, { address: TENANCY_STORE, thread: 'tenancy', args: { path, journalDir: journalDirOf(path), retentionDays: 30 } });
    value(await ref.ask({ type: 'create-org', name: 'acme', actor: 'ops' }));
    // A neighbour on the same thread takes it down the way a native crash would, the store's lock still held.
    const crasher = await system.spawn(counter, { address: counterAt('crasher'), thread: 'tenancy', args: { start: 0 } });
    const respawned = new Promise<{ thread: string; actors: string[] }>((r) => system.events.once('thread-respawned', r));
    crasher.tell({ type: 'exit-thread' });
    assert.ok((await respawned).actors.includes('tenancy-store'));
    const snap = await ref.ask({ type: 'snapshot' });
    assert.equal(snap.orgs.map((o) => o.name), ['acme']);
  } finally {
    await system.shutdown();
    t.remove();
  }
});

test('its metrics say what it stored, what it skipped and how far it is behind the journal', async () => {
  const t = tempDir();
  const path = join(t.dir, 'tenancy.db');
  const dir = journalDirOf(path);
  const system = await ActorSystem.start({ threads: [{ name: 'tenancy' }] });
  const read = async (name: string): Promise<number> => {
    const text = await (await system.metrics()).metrics();
    const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text);
    assert.ok(m, `${name} is exported`);
    return Number(m[1]);
  };
  try {
    const ref = await system.spawn(storeActor, { address: TENANCY_STORE, thread: 'tenancy', args: { path, journalDir: dir, retentionDays: 30 } });
    journal(dir, 1, [billed('a'), billed('b')], '{"not a record"}\n');
    await ref.ask({ type: 'flush' });
    assert.is(await read('llmgw_usage_records_stored_total'), 2);
    assert.is(await read('llmgw_usage_journal_lines_skipped_total'), 1);
    assert.is(await read('llmgw_usage_journal_backlog_bytes'), 0);
    // Half a line is written: the store waits for the rest, and says it is behind by it.
    journal(dir, 1, [], '{"id":"c"');
    await ref.ask({ type: 'flush' });
    assert.is(await read('llmgw_usage_journal_backlog_bytes'), '{"id":"c"'.length);
  } finally {
    await system.shutdown();
    t.remove();
  }
});

test.run();
