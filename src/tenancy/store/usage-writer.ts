import { closeSync, fdatasyncSync, fstatSync, openSync, readSync, statSync, unlinkSync } from 'node:fs';
import type { Logger } from '../../log.js';
import type { BilledRecord } from '../../messages/tenancy.js';
import { listSegments, segmentPath } from '../journal-segments.js';
import type { JournalPosition, TenancyStore } from './tenancy-store.js';

export interface UsageWriterOptions {
  /** Records per transaction. */
  maxBatch?: number;
  /** Monotonic clock, ms: when keys' last use is due. */
  now?: () => number;
}

/** Most records per transaction: at ~80k rows/s a batch holds the store's thread for ~6 ms. */
const MAX_BATCH = 500;
/**
 * Keys' last use is display metadata, written at most this often: an update per key per
 * batch was a third of the statements with a thousand active keys. A kill loses at most
 * this much of it, never a record.
 */
const LAST_USE_MS = 5_000;
const CHUNK_BYTES = 256 * 1024;
const NEWLINE = 0x0a;

/**
 * Moves the usage journal into the store. It reads the segments in order, complete
 * lines only, and commits each batch of records together with the position after its
 * last line, so that a kill at any point replays from that position: every journaled
 * record is stored exactly once. A segment is deleted once the position has moved past
 * it. It never blocks the journal's writer, which appends on another thread without
 * waiting for it.
 */
export class UsageWriter {
  private readonly store: TenancyStore;
  private readonly dir: string;
  private readonly log: Logger;
  private readonly maxBatch: number;
  private readonly now: () => number;
  private pos: JournalPosition | null;
  private reading: { seq: number; fd: number } | null = null;
  private syncing: { seq: number; fd: number } | null = null;
  /** Keys seen since their last use was written → the latest request time. */
  private readonly lastUse = new Map<string, number>();
  private lastUseWritten = -Infinity;
  /** Records stored since start. */
  stored = 0;
  /** Journal lines skipped since start: malformed, or torn at the end of a finished segment. */
  skipped = 0;

  constructor(store: TenancyStore, dir: string, log: Logger, opts: UsageWriterOptions = {}) {
    this.store = store;
    this.dir = dir;
    this.log = log;
    this.maxBatch = opts.maxBatch ?? MAX_BATCH;
    this.now = opts.now ?? (() => performance.now());
    this.pos = store.journalPosition();
  }

  /**
   * Stores every complete line journaled so far, or stops after about `maxRecords` so
   * that a backlog is worked off in slices between the actor's other messages. Returns
   * how many records were stored.
   */
  drain(maxRecords = Infinity): number {
    const stored = this.drainJournal(maxRecords);
    if (this.now() - this.lastUseWritten >= LAST_USE_MS) this.writeLastUse();
    return stored;
  }

  /** Writes the keys' last use seen so far (the writer does every few seconds; a stop does it at once). */
  writeLastUse(): void {
    this.lastUseWritten = this.now();
    if (this.lastUse.size === 0) return;
    this.store.recordLastUse(this.lastUse);
    this.lastUse.clear();
  }

  private drainJournal(maxRecords: number): number {
    let stored = 0;
    for (;;) {
      const segs = listSegments(this.dir);
      const pos = this.pos;
      for (const s of segs) if (pos !== null && s < pos.segment) this.remove(s);
      const current = segs.find((s) => pos === null || s >= pos.segment);
      if (current === undefined) return stored;
      const from = pos !== null && pos.segment === current ? pos.offset : 0;
      // Listed before reading: when a later segment exists, this one is complete.
      const final = segs.some((s) => s > current);
      const batch = this.read(current, from);
      if (batch.end > from) {
        this.store.ingest(batch.records, { segment: current, offset: batch.end });
        this.pos = { segment: current, offset: batch.end };
        stored += batch.records.length;
        this.stored += batch.records.length;
        for (const r of batch.records) if (r.keyId !== null && r.at > (this.lastUse.get(r.keyId) ?? -Infinity)) this.lastUse.set(r.keyId, r.at);
      }
      if (batch.more) {
        if (stored >= maxRecords) return stored;
        continue;
      }
      if (!final) return stored;
      if (batch.size > batch.end) {
        this.skipped++;
        this.log.warn('torn line at the end of a finished usage journal segment skipped', { segment: segmentPath(this.dir, current), offset: batch.end, bytes: batch.size - batch.end });
      }
      const next = segs.find((s) => s > current)!;
      this.store.ingest([], { segment: next, offset: 0 });
      this.pos = { segment: next, offset: 0 };
      this.remove(current);
    }
  }

  /** Bytes journaled and not stored yet: what the store is behind the data port by. */
  backlogBytes(): number {
    let bytes = 0;
    for (const seq of listSegments(this.dir)) {
      if (this.pos !== null && seq < this.pos.segment) continue;
      try {
        bytes += statSync(segmentPath(this.dir, seq)).size - (this.pos !== null && seq === this.pos.segment ? this.pos.offset : 0);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
    }
    return bytes;
  }

  /** Forces the newest segment to disk: the journal's writer never waits for a sync, this bounds what a power loss takes. */
  syncJournal(): void {
    const newest = listSegments(this.dir).at(-1);
    if (newest === undefined) return;
    if (this.syncing?.seq !== newest) {
      this.closeFd(this.syncing);
      this.syncing = null;
      const fd = this.openFd(newest);
      if (fd === null) return;
      this.syncing = { seq: newest, fd };
    }
    fdatasyncSync(this.syncing.fd);
  }

  close(): void {
    this.closeFd(this.reading);
    this.closeFd(this.syncing);
    this.reading = this.syncing = null;
  }

  /** Up to `maxBatch` complete lines of segment `seq` from byte `from`, parsed; malformed ones are logged and skipped. */
  private read(seq: number, from: number): { records: BilledRecord[]; end: number; size: number; more: boolean } {
    if (this.reading?.seq !== seq) {
      this.closeFd(this.reading);
      this.reading = null;
      const fd = this.openFd(seq);
      if (fd === null) return { records: [], end: from, size: from, more: false };
      this.reading = { seq, fd };
    }
    const fd = this.reading.fd;
    const size = fstatSync(fd).size;
    const records: BilledRecord[] = [];
    let at = from;
    let chunk = CHUNK_BYTES;
    while (records.length < this.maxBatch && at < size) {
      const buf = Buffer.allocUnsafe(Math.min(chunk, size - at));
      const got = readSync(fd, buf, 0, buf.length, at);
      let start = 0;
      let nl: number;
      while (records.length < this.maxBatch && (nl = buf.indexOf(NEWLINE, start)) !== -1 && nl < got) {
        const line = buf.toString('utf8', start, nl);
        const parsed = parseLine(line);
        if (typeof parsed !== 'string') records.push(parsed);
        else {
          this.skipped++;
          this.log.warn('malformed usage journal line skipped', { segment: segmentPath(this.dir, seq), offset: at + start, reason: parsed });
        }
        start = nl + 1;
      }
      if (start === 0) {
        // No complete line in the chunk: a line longer than it, or a line still being written.
        if (got < buf.length || at + got >= size) break;
        chunk *= 2;
        continue;
      }
      at += start;
    }
    return { records, end: at, size, more: records.length >= this.maxBatch && at < size };
  }

  private openFd(seq: number): number | null {
    try {
      return openSync(segmentPath(this.dir, seq), 'r');
    } catch (err) {
      // Deleted between listing and opening: only this writer deletes, so it was a stale listing.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
  }

  private closeFd(h: { fd: number } | null): void {
    if (h) closeSync(h.fd);
  }

  private remove(seq: number): void {
    if (this.reading?.seq === seq) (this.closeFd(this.reading), (this.reading = null));
    if (this.syncing?.seq === seq) (this.closeFd(this.syncing), (this.syncing = null));
    try {
      unlinkSync(segmentPath(this.dir, seq));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
}

/** The fields the store keeps and their JSON types, checked on every line. */
const FIELDS: readonly { name: string; type: 'string' | 'number' | 'boolean'; nullable: boolean }[] = Object.entries({
  id: 'string',
  at: 'number',
  path: 'string',
  modelAsked: 'string',
  modelServed: 'string?',
  endpoint: 'string?',
  status: 'number',
  error: 'string?',
  stream: 'boolean',
  promptTokens: 'number',
  completionTokens: 'number',
  cachedTokens: 'number',
  usageEstimated: 'boolean',
  ttftMs: 'number?',
  durationMs: 'number',
  queueMs: 'number',
  band: 'string?',
  keyId: 'string?',
  projectId: 'string?',
  teamId: 'string?',
  orgId: 'string?',
  units: 'number',
}).map(([name, kind]) => ({ name, type: kind.replace('?', '') as 'string' | 'number' | 'boolean', nullable: kind.endsWith('?') }));

/** A journal line as a record, or why it is not one. */
function parseLine(line: string): BilledRecord | string {
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch (err) {
    return `not JSON: ${(err as Error).message}`;
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return 'not a JSON object';
  const o = v as Record<string, unknown>;
  for (const f of FIELDS) {
    const x = o[f.name];
    if (typeof x === f.type ? f.type !== 'number' || Number.isFinite(x) : x === null && f.nullable) continue;
    return `${f.name}: expected ${f.nullable ? `${f.type} or null` : f.type}, got ${x === null ? 'null' : typeof x}`;
  }
  return o as unknown as BilledRecord;
}
