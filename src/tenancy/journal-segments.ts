import { readdirSync } from 'node:fs';
import { join } from 'node:path';

// The usage journal is a folder of append-only segment files of JSON lines (one
// BilledRecord each, `\n`-terminated), numbered in the order they were written. The
// data port's thread appends to the highest-numbered segment and starts a new one at
// every start and past a size; the store's writer reads them in order, commits what it
// read together with its position, and deletes a segment once it has read all of it
// and a later one exists. The file is the queue between the two threads: nothing sits
// in a mailbox that a kill could take away.

/** Past this size the writer of the journal starts a new segment. */
export const SEGMENT_BYTES = 16 * 1024 * 1024;

const NAME = /^(\d{12})\.jsonl$/;

/** The journal folder of a store file. */
export function journalDirOf(storePath: string): string {
  return `${storePath}.usage-journal`;
}

export function segmentName(seq: number): string {
  return `${String(seq).padStart(12, '0')}.jsonl`;
}

export function segmentPath(dir: string, seq: number): string {
  return join(dir, segmentName(seq));
}

/** The segment numbers in `dir`, ascending; empty when the folder does not exist. */
export function listSegments(dir: string): number[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const seqs: number[] = [];
  for (const n of names) {
    const m = NAME.exec(n);
    if (m) seqs.push(Number(m[1]));
  }
  return seqs.sort((a, b) => a - b);
}
