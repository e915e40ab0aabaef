import { appendFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import type { BilledRecord } from '../../src/messages/tenancy.js';
import { journalDirOf, listSegments, segmentPath } from '../../src/tenancy/journal-segments.js';
import { SqliteStore } from '../../src/tenancy/store/sqlite-store.js';
import { UsageWriter } from '../../src/tenancy/store/usage-writer.js';
import { mulberry32 } from '../support/rng.js';
import { suite } from '../support/uvu.js';
import { billed, clock, journal, recordingLogger, storedIds, tempDir } from './helpers.js';

const test = suite('the usage writer moves the journal into the store exactly once');

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 2, 14, 10, 0);

/** A store with one org → team → project → two keys, and its journal folder. */
function setup() {
  const t = tempDir();
  const path = join(t.dir, 'tenancy.db');
  const c = clock(T0 + 2 * HOUR);
  const store = SqliteStore.open(path, { now: c.now });
  store.createOrg('o', 'ops');
  store.createTeam('t', 'o', 'ops');
  const { project } = store.createProject('p', 't', 'ops');
  const k1 = store.createKey('p', 'one', null, 'ops').issued.record;
  const k2 = store.createKey('p', 'two', null, 'ops').issued.record;
  const chain = (keyId: string) => ({ keyId, projectId: project.id, teamId: project.teamId, orgId: store.snapshot().teams[0]!.orgId });
  return { t, path, c, store, dir: journalDirOf(path), k1, k2, chain };
}

test('records from several segments land as rows and hourly rollups that add up exactly; read segments are deleted', () => {
  const { t, store, dir, k1, k2, chain } = setup();
  const log = recordingLogger();
  try {
    const rng = mulberry32(7);
    const records: BilledRecord[] = [];
    for (let i = 0; i < 1_300; i++) {
      const key = rng() < 0.6 ? k1.id : k2.id;
      records.push(billed(`r${i}`, { ...chain(key), at: T0 + Math.floor(rng() * 2 * HOUR), modelServed: rng() < 0.5 ? 'a' : 'b', promptTokens: 1 + Math.floor(rng() * 100), completionTokens: Math.floor(rng() * 50), units: 0.25 * Math.floor(rng() * 8), status: rng() < 0.1 ? 500 : 200 }));
    }
    journal(dir, 1, records.slice(0, 400));
    journal(dir, 2, records.slice(400, 1_000));
    journal(dir, 3, records.slice(1_000));
    const writer = new UsageWriter(store, dir, log);
    assert.is(writer.drain(), 1_300);
    assert.equal(listSegments(dir), [3], 'finished segments are deleted, the newest stays');
    assert.is(writer.drain(), 0, 'nothing is read twice');
    writer.close();

    const sum = (rs: BilledRecord[]) => ({
      requests: rs.length,
      promptTokens: rs.reduce((a, r) => a + r.promptTokens, 0),
      completionTokens: rs.reduce((a, r) => a + r.completionTokens, 0),
      units: rs.reduce((a, r) => a + r.units, 0),
      errors: rs.filter((r) => r.status >= 400).length,
    });
    const pick = (r: { requests: number; promptTokens: number; completionTokens: number; units: number; errors: number }) => ({ requests: r.requests, promptTokens: r.promptTokens, completionTokens: r.completionTokens, units: r.units, errors: r.errors });
    // Rollups (a period on hours) and raw rows (a period off them) agree with the records.
    for (const [since, until] of [[null, null], [T0, T0 + HOUR], [T0 + 1234, T0 + HOUR + 99]] as const) {
      const inside = records.filter((r) => (since === null || r.at >= since) && (until === null || r.at < until));
      const byKey = store.usage({ by: 'key', since, until, of: null });
      assert.equal(byKey.map((r) => r.id), [k1.id, k2.id].sort());
      for (const row of byKey) assert.equal(pick(row), sum(inside.filter((r) => r.keyId === row.id)), `key ${row.id} ${since}-${until}`);
      const byModel = store.usage({ by: 'model', since, until, of: { scope: 'key', ref: 'one' } });
      for (const row of byModel) assert.equal(pick(row), sum(inside.filter((r) => r.modelServed === row.id && r.keyId === k1.id)));
      const byProject = store.usage({ by: 'project', since, until, of: { scope: 'org', ref: 'o' } });
      assert.equal(byProject.map((r) => [r.name, pick(r)]), [['p', sum(inside)]]);
    }
    const lastUse = (id: string) => Math.max(...records.filter((r) => r.keyId === id).map((r) => r.at));
    const keys = store.snapshot().keys;
    assert.equal(keys.map((k) => k.lastUsedAt), [lastUse(keys[0]!.id), lastUse(keys[1]!.id)]);
  } finally {
    store.close();
    t.remove();
  }
});

test("spend counts each key's units since the UTC day and month began", () => {
  const { t, store, dir, k1, k2, chain, c } = setup();
  try {
    const now = c.now(); // 12:00 on the 14th
    journal(dir, 1, [
      billed('feb', { ...chain(k1.id), at: Date.UTC(2026, 1, 28, 23, 59), units: 100 }),
      billed('yesterday', { ...chain(k1.id), at: Date.UTC(2026, 2, 13, 23, 59), units: 10 }),
      billed('today', { ...chain(k1.id), at: Date.UTC(2026, 2, 14, 0, 0), units: 1 }),
      billed('today2', { ...chain(k1.id), at: now - 1, units: 2 }),
      billed('other', { ...chain(k2.id), at: now - 1, units: 4 }),
      billed('anonymous', { keyId: null, projectId: null, teamId: null, orgId: null, status: 401, units: 0, at: now - 1 }),
    ]);
    const writer = new UsageWriter(store, dir, recordingLogger());
    assert.is(writer.drain(), 6);
    writer.close();
    const day = Date.UTC(2026, 2, 14);
    const month = Date.UTC(2026, 2, 1);
    assert.equal(store.snapshot().spend, [
      { keyId: k1.id, dayStart: day, day: 3, monthStart: month, month: 13 },
      { keyId: k2.id, dayStart: day, day: 4, monthStart: month, month: 4 },
    ].sort((a, b) => (a.keyId < b.keyId ? -1 : 1)));
    assert.equal(store.usage({ by: 'model', since: null, until: null, of: null }).map((r) => [r.id, r.requests, r.errors]), [['llama', 6, 1]], 'a request without a key counts by model');
    assert.equal(store.usage({ by: 'key', since: null, until: null, of: null }).map((r) => r.requests).sort(), [1, 4], 'but under no key');
  } finally {
    store.close();
    t.remove();
  }
});

test('a line still being written waits for its end; a torn line at the end of a finished segment is skipped and logged', () => {
  const { t, path, store, dir, k1, chain } = setup();
  const log = recordingLogger();
  try {
    const writer = new UsageWriter(store, dir, log);
    const half = JSON.stringify(billed('b', chain(k1.id)));
    journal(dir, 1, [billed('a', chain(k1.id))], half.slice(0, 40));
    assert.is(writer.drain(), 1);
    appendFileSync(segmentPath(dir, 1), half.slice(40) + '\n');
    assert.is(writer.drain(), 1, 'the completed line is read once whole');
    journal(dir, 1, [], '{"id":"torn","at":');
    journal(dir, 2, [billed('c', chain(k1.id))]);
    assert.is(writer.drain(), 1);
    writer.close();
    const torn = log.lines.filter((l) => l.msg.includes('torn line'));
    assert.is(torn.length, 1);
    assert.is(torn[0]!.fields.segment, segmentPath(dir, 1));
    assert.equal(listSegments(dir), [2]);
    store.close();
    assert.equal(storedIds(path), ['a', 'b', 'c']);
  } finally {
    t.remove();
  }
});

test('a malformed line is logged with its segment and offset and skipped; the lines around it are kept', () => {
  const { t, path, store, dir, k1, chain } = setup();
  const log = recordingLogger();
  try {
    const first = JSON.stringify(billed('a', chain(k1.id))) + '\n';
    journal(dir, 1, [billed('a', chain(k1.id))], 'not json\n' + JSON.stringify({ ...billed('x'), units: 'many' }) + '\n');
    journal(dir, 1, [billed('b', chain(k1.id))]);
    const writer = new UsageWriter(store, dir, log);
    assert.is(writer.drain(), 2);
    writer.close();
    const bad = log.lines.filter((l) => l.msg.includes('malformed'));
    assert.equal(bad.map((l) => [l.fields.segment, l.fields.offset]), [
      [segmentPath(dir, 1), Buffer.byteLength(first)],
      [segmentPath(dir, 1), Buffer.byteLength(first) + 'not json\n'.length],
    ]);
    assert.match(String(bad[1]!.fields.reason), /units: expected number, got string/);
    store.close();
    assert.equal(storedIds(path), ['a', 'b']);
  } finally {
    t.remove();
  }
});

test('stopped anywhere and reopened, the writer stores every journaled record exactly once (random batches, random stops)', () => {
  for (let seed = 1; seed <= 5; seed++) {
    const rng = mulberry32(seed);
    const t = tempDir();
    const path = join(t.dir, 'tenancy.db');
    const dir = journalDirOf(path);
    try {
      const expected: string[] = [];
      let seq = 1;
      let n = 0;
      for (let round = 0; round < 5; round++) {
        // A server run: a new segment at start, records appended, the writer reading in
        // random slices and stopped without a final drain.
        const store = SqliteStore.open(path);
        const writer = new UsageWriter(store, dir, recordingLogger(), { maxBatch: 1 + Math.floor(rng() * 60) });
        for (let burst = 0; burst < 4; burst++) {
          if (rng() < 0.3) seq++;
          const batch = Array.from({ length: Math.floor(rng() * 80) }, () => billed(`s${seed}-${n++}`));
          journal(dir, seq, batch);
          expected.push(...batch.map((r) => r.id));
          writer.drain(Math.floor(rng() * 100));
        }
        writer.close();
        store.close();
        seq++;
      }
      const store = SqliteStore.open(path);
      const writer = new UsageWriter(store, dir, recordingLogger());
      writer.drain();
      writer.close();
      store.close();
      const ids = storedIds(path);
      assert.is(new Set(ids).size, ids.length, `seed ${seed}: no record twice`);
      assert.equal(ids.sort(), expected.sort(), `seed ${seed}: none lost`);
      assert.ok(listSegments(dir).length <= 1, `seed ${seed}: only the newest segment is left`);
    } finally {
      t.remove();
    }
  }
});

test('raw rows past retention are deleted in batches; the rollups, and so usage by hour, stay', () => {
  const { t, path, store, dir, k1, chain } = setup();
  try {
    journal(dir, 1, Array.from({ length: 30 }, (_, i) => billed(`old${i}`, { ...chain(k1.id), at: T0 - 10 * 24 * HOUR })));
    journal(dir, 1, [billed('new', { ...chain(k1.id), at: T0 })]);
    const writer = new UsageWriter(store, dir, recordingLogger());
    writer.drain();
    writer.close();
    assert.is(store.pruneUsage(T0 - 24 * HOUR, 20), 20);
    assert.is(store.pruneUsage(T0 - 24 * HOUR, 20), 10);
    assert.is(store.pruneUsage(T0 - 24 * HOUR, 20), 0);
    assert.equal(store.usage({ by: 'key', since: null, until: null, of: null }).map((r) => r.requests), [31]);
    store.close();
    assert.equal(storedIds(path), ['new']);
  } finally {
    t.remove();
  }
});

test('a missing journal folder is nothing to read, and the writer still syncs nothing without failing', () => {
  const { t, store, dir } = setup();
  try {
    const writer = new UsageWriter(store, dir, recordingLogger());
    assert.is(writer.drain(), 0);
    writer.syncJournal();
    journal(dir, 5, [billed('a')]);
    writer.syncJournal();
    assert.ok(existsSync(segmentPath(dir, 5)));
    assert.is(writer.drain(), 1);
    writer.close();
  } finally {
    store.close();
    t.remove();
  }
});

test.run();
