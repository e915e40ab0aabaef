import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { Gauge, Registry } from 'prom-client';
import type { BilledRecord } from '../messages/tenancy.js';
import { listSegments, SEGMENT_BYTES, segmentPath } from './journal-segments.js';

// The data port's end of the usage journal (`journal-segments.ts`): one JSON line per
// request, written synchronously on an O_APPEND descriptor before the response's last
// byte, so a record is in the kernel's page cache (and survives a SIGKILL of the
// process) before the client can have its answer. Durability against a power loss is
// the store's periodic fsync.
//
// A write that fails leaves the appender broken until one succeeds: the data port then
// refuses new requests (503) rather than serve what it cannot bill. The next write
// starts a new segment, so a line cut short by the failure is never continued.

export class JournalAppender {
  private fd: number | null = null;
  private seq: number;
  private bytes = 0;
  private failed: Error | null = null;

  private constructor(private readonly dir: string) {
    mkdirSync(dir, { recursive: true });
    const segments = listSegments(dir);
    this.seq = segments.length > 0 ? segments[segments.length - 1]! : 0;
    this.rotate();
  }

  /** Opens the journal in `dir` (created if absent) on a new segment after the highest there. */
  static open(dir: string): JournalAppender {
    return new JournalAppender(dir);
  }

  /** True while the last write failed: nothing can be billed. */
  get broken(): boolean {
    return this.failed !== null;
  }

  /** Why the last write failed; null while it works. */
  get reason(): string | null {
    return this.failed?.message ?? null;
  }

  /** Appends one record; false when it could not be written (the appender is then broken). */
  append(record: BilledRecord): boolean {
    const line = Buffer.from(JSON.stringify(record) + '\n');
    try {
      if (this.fd === null || (this.bytes > 0 && this.bytes + line.length > SEGMENT_BYTES)) this.rotate();
      let at = 0;
      while (at < line.length) at += writeSync(this.fd!, line, at);
      this.bytes += line.length;
      this.failed = null;
      return true;
    } catch (err) {
      this.failed = err as Error;
      this.closeFd();
      return false;
    }
  }

  close(): void {
    this.closeFd();
  }

  private rotate(): void {
    this.closeFd();
    this.fd = openSync(segmentPath(this.dir, this.seq + 1), 'a');
    this.seq++;
    this.bytes = 0;
  }

  private closeFd(): void {
    if (this.fd === null) return;
    const fd = this.fd;
    this.fd = null;
    try {
      closeSync(fd);
    } catch {
      // Already unusable; the next append opens a new segment.
    }
  }
}

/** Whether the data port can journal (and so serve) right now, read when Prometheus scrapes. */
export function journalMetrics(journal: JournalAppender): Registry {
  const registry = new Registry();
  new Gauge({
    name: 'llmgw_usage_journal_writable',
    help: 'Whether the usage journal takes records (1) or its last write failed (0): while 0, every request is refused 503 rather than served unbilled',
    registers: [registry],
    collect(this: Gauge) {
      this.set(journal.broken ? 0 : 1);
    },
  });
  return registry;
}
