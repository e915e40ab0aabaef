import { LlmgwError } from '../errors.js';

/**
 * What a full mailbox does with one more message.
 * - `reject`: the new message is refused: `tell` returns false, an ask fails with
 *   LLMGW_MAILBOX_FULL (commands and bills, whose loss the sender must know of).
 * - `drop-oldest`: the oldest queued message is discarded (telemetry, where the newest
 *   sample supersedes the old one). The caller may protect some messages (an ask, whose
 *   sender waits on it, against the ticks that crowd it out): the oldest unprotected one
 *   goes first, and a protected one only when nothing else is queued.
 */
export type OverflowPolicy = 'reject' | 'drop-oldest';

export interface MailboxOptions {
  capacity: number;
  overflow: OverflowPolicy;
}

/**
 * A bounded FIFO on a ring buffer. The capacity is fixed at creation: a mailbox never
 * grows, which is the point — an actor that falls behind pushes back on its senders
 * instead of eating the heap.
 */
export class Mailbox<T> {
  readonly capacity: number;
  readonly overflow: OverflowPolicy;
  private readonly slots: (T | undefined)[];
  private head = 0;
  private count = 0;
  /** Most messages ever queued at once. */
  highWater = 0;
  dropped = 0;
  rejected = 0;

  constructor(opts: MailboxOptions) {
    if (!Number.isInteger(opts.capacity) || opts.capacity < 1) {
      throw new LlmgwError('LLMGW_INVALID_REQUEST', `mailbox capacity must be an integer ≥ 1, got ${opts.capacity}`);
    }
    this.capacity = opts.capacity;
    this.overflow = opts.overflow;
    this.slots = new Array<T | undefined>(opts.capacity);
  }

  get size(): number {
    return this.count;
  }

  /**
   * Queues `item`. Returns false when a full `reject` mailbox refuses it; a full
   * `drop-oldest` mailbox discards its oldest item that `keep` does not protect (its
   * oldest when all are), handed to `onDrop`.
   */
  push(item: T, onDrop?: (dropped: T) => void, keep?: (queued: T) => boolean): boolean {
    if (this.count === this.capacity) {
      if (this.overflow === 'reject') {
        this.rejected++;
        return false;
      }
      const dropped = this.removeAt(keep === undefined ? 0 : this.oldestUnprotected(keep));
      this.dropped++;
      onDrop?.(dropped);
    }
    this.slots[(this.head + this.count) % this.capacity] = item;
    this.count++;
    if (this.count > this.highWater) this.highWater = this.count;
    return true;
  }

  shift(): T | undefined {
    if (this.count === 0) return undefined;
    const item = this.slots[this.head];
    this.slots[this.head] = undefined; // let the message be collected
    this.head = (this.head + 1) % this.capacity;
    this.count--;
    return item;
  }

  /** Position (from the head) of the oldest item `keep` does not protect; 0 when it protects all. */
  private oldestUnprotected(keep: (queued: T) => boolean): number {
    for (let i = 0; i < this.count; i++) if (!keep(this.slots[(this.head + i) % this.capacity]!)) return i;
    return 0;
  }

  /** Takes out the item `at` places from the head, closing the gap (drop-oldest mailboxes are small). */
  private removeAt(at: number): T {
    const slot = (i: number): number => (this.head + i) % this.capacity;
    const item = this.slots[slot(at)]!;
    for (let i = at; i > 0; i--) this.slots[slot(i)] = this.slots[slot(i - 1)];
    this.slots[this.head] = undefined;
    this.head = (this.head + 1) % this.capacity;
    this.count--;
    return item;
  }

  /** Empties the mailbox, handing every queued item to `each` (used on stop to fail pending asks). */
  drainTo(each: (item: T) => void): void {
    for (let item = this.shift(); item !== undefined; item = this.shift()) each(item);
  }
}
