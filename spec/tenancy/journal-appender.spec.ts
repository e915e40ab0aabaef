// The data port's end of the usage journal: a new segment after the highest at every
// start, one line per record, a new segment past the size, and a failed write that
// breaks the appender until a write succeeds again.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { JournalAppender } from '../../src/tenancy/journal-appender.js';
import { listSegments, SEGMENT_BYTES, segmentPath } from '../../src/tenancy/journal-segments.js';
import { billed } from './fixtures.js';

const freshDir = (): string => join(mkdtempSync(join(tmpdir(), 'llmgw-journal-')), 'db.usage-journal');
const lines = (dir: string, seq: number): unknown[] =>
  readFileSync(segmentPath(dir, seq), 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as unknown);

test('each start writes to a new segment after the highest one there, one JSON line per record', () => {
  const dir = freshDir();
  mkdirSync(dir, { recursive: true });
  writeFileSync(segmentPath(dir, 7), '');
  const j = JournalAppender.open(dir);
  assert.ok(j.append(billed({ id: 'a' })));
  assert.ok(j.append(billed({ id: 'b' })));
  j.close();
  assert.equal(listSegments(dir), [7, 8]);
  assert.equal(lines(dir, 8), [billed({ id: 'a' }), billed({ id: 'b' })]);
  const again = JournalAppender.open(dir);
  again.close();
  assert.equal(listSegments(dir), [7, 8, 9]);
});

test('the journal folder is created when absent', () => {
  const dir = freshDir();
  const j = JournalAppender.open(dir);
  j.append(billed());
  j.close();
  assert.equal(listSegments(dir), [1]);
});

test('a record that would take a segment past its size starts the next one', () => {
  const dir = freshDir();
  const j = JournalAppender.open(dir);
  const big = 'x'.repeat(SEGMENT_BYTES / 2);
  j.append(billed({ id: '1', modelAsked: big }));
  j.append(billed({ id: '2' }));
  j.append(billed({ id: '3', modelAsked: big }));
  j.close();
  assert.equal(listSegments(dir), [1, 2]);
  assert.equal(lines(dir, 1).map((r) => (r as { id: string }).id), ['1', '2']);
  assert.equal(lines(dir, 2).map((r) => (r as { id: string }).id), ['3']);
});

test('a failed write breaks the appender until a write succeeds again, on a new segment', () => {
  const dir = freshDir();
  const j = JournalAppender.open(dir);
  j.append(billed({ id: '1' }));
  rmSync(dir, { recursive: true });
  // This one needs a new segment, in a folder that is gone.
  assert.not.ok(j.append(billed({ id: '2', modelAsked: 'x'.repeat(SEGMENT_BYTES) })));
  assert.ok(j.broken);
  assert.match(j.reason!, /ENOENT/);
  assert.not.ok(j.append(billed({ id: '3' })), 'still nowhere to write');
  mkdirSync(dir);
  assert.ok(j.append(billed({ id: '4' })));
  assert.not.ok(j.broken);
  assert.is(j.reason, null);
  j.close();
  assert.equal(listSegments(dir), [2]);
  assert.equal(lines(dir, 2).map((r) => (r as { id: string }).id), ['4']);
});

test.run();
