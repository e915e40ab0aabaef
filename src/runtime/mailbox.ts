import { LlmgwError } from '../errors.js';

/**
 * What a full mailbox does with one more message.
 * - `reject`: the new message is refused: `tell` returns false, an ask fails with
 *   LLMGW_MAILBOX_FULL (commands and bills, whose loss the sender must know of).
 * - `drop-oldest`: the oldest queued message is discarded (telemetry, where the newest
 *   sample supersedes the old one).
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
   * `drop-oldest` mailbox discards its oldest item instead, handed to `onDrop`.
   */
  push(item: T, onDrop?: (dropped: T) => void): boolean {
    if (this.count === this.capacity) {
      if (this.overflow === 'reject') {
        this.rejected++;
        return false;
      }
      const dropped = this.shift()!;
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

  /** Empties the mailbox, handing every queued item to `each` (used on stop to fail pending asks). */
  drainTo(each: (item: T) => void): void {
    for (let item = this.shift(); item !== undefined; item = this.shift()) each(item);
  }
}
