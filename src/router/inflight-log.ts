/**
 * When the router's recent requests to one endpoint started and ended, so that a scrape
 * can be lined up with them: the engine's running and waiting counts describe the moment
 * the scrape was taken, and requests that started or ended after that moment — before the
 * scrape reached the main thread — must be added or taken away, not missed.
 */
export class InflightLog {
  private readonly starts: Float64Array;
  private readonly ends: Float64Array;
  private startCount = 0;
  private endCount = 0;

  /** Remembers the last `size` of each; a poll interval holds far fewer on one endpoint. */
  constructor(private readonly size = 512) {
    this.starts = new Float64Array(size);
    this.ends = new Float64Array(size);
  }

  started(now: number): void {
    this.starts[this.startCount++ % this.size] = now;
  }

  ended(now: number): void {
    this.ends[this.endCount++ % this.size] = now;
  }

  /** Requests started at or after `since`. */
  startedSince(since: number): number {
    return countSince(this.starts, this.startCount, this.size, since);
  }

  /** Requests ended at or after `since`. */
  endedSince(since: number): number {
    return countSince(this.ends, this.endCount, this.size, since);
  }
}

/** Walks back from the newest entry while entries are at or after `since`. */
function countSince(ring: Float64Array, count: number, size: number, since: number): number {
  let n = 0;
  for (let i = count - 1; i >= 0 && count - i <= size && ring[i % size]! >= since; i--) n++;
  return n;
}
