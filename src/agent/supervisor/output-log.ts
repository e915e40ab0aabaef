// A shard's output: every process of the shard writes stdout and stderr, merged, to one
// file in the state directory, and failure reports carry its last lines.
//
// A file rather than pipes into the agent because engines outlive the agent on purpose
// (that is what adoption is for): a pipe whose reader died turns the engine's next log
// line into EPIPE, and an adopted engine's earlier output would be lost. With a file, an
// adopted shard's tail still shows what it printed before the restart. The tail is read
// from the end of the file and bounded in bytes and lines, so a chatty engine costs the
// agent no memory.
import { closeSync, fstatSync, openSync, readSync, rmSync } from 'node:fs';

/** Enough for a Python traceback with its context; bounded so a tail read stays cheap. */
const TAIL_BYTES = 64 * 1024;

export class OutputLog {
  constructor(
    readonly path: string,
    private readonly lines: number,
  ) {}

  /** A descriptor for a child's stdout/stderr, appending. `truncate` starts a fresh log (a new start of the shard). */
  open(truncate: boolean): number {
    return openSync(this.path, truncate ? 'w' : 'a');
  }

  /**
   * The last lines written, oldest first. A progress bar redraws its line with `\r`; only
   * what a terminal would show (the text after the last `\r`) is kept.
   */
  tail(n = this.lines): string[] {
    let fd: number;
    try {
      fd = openSync(this.path, 'r');
    } catch {
      return [];
    }
    try {
      const size = fstatSync(fd).size;
      const length = Math.min(size, TAIL_BYTES);
      const buf = Buffer.alloc(length);
      readSync(fd, buf, 0, length, size - length);
      const lines = buf.toString('utf8').split('\n');
      if (length < size) lines.shift(); // the first line was cut by the window
      if (lines.at(-1) === '') lines.pop();
      return lines.slice(-n).map((l) => l.slice(l.lastIndexOf('\r') + 1));
    } finally {
      closeSync(fd);
    }
  }

  remove(): void {
    rmSync(this.path, { force: true });
  }
}
