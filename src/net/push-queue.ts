// An async iterable fed by push(): how a stream's outgoing messages are written from
// callbacks while the RPC library pulls them with for-await. Never awaited: a producer
// that had to await room would tie the control logic to the peer's read speed. It may
// be bounded: past `capacity` a push is refused (LLMGW_MAILBOX_FULL), never dropped,
// so the producer knows and sends it again later (a lost StopShard is a leaked GPU).
import { LlmgwError } from '../errors.js';

export class PushQueue<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  private waiter: ((r: IteratorResult<T>) => void) | null = null;
  private failWaiter: ((err: unknown) => void) | null = null;
  private ended = false;
  private error: unknown = undefined;

  constructor(private readonly capacity = Infinity) {}

  /** Items pushed and not read yet: what a producer bounds its queue by. */
  get size(): number {
    return this.items.length;
  }

  /** Whether push() still accepts messages. */
  get open(): boolean {
    return !this.ended;
  }

  /** Queues `item`; throws LLMGW_STREAM_CLOSED once the queue is ended, LLMGW_MAILBOX_FULL when it holds `capacity` unread. */
  push(item: T): void {
    if (this.ended) throw new LlmgwError('LLMGW_STREAM_CLOSED', 'the stream is closed: nothing more can be sent on it');
    if (this.items.length >= this.capacity) throw new LlmgwError('LLMGW_MAILBOX_FULL', `the stream's send queue holds ${this.capacity} unsent messages; the peer is not reading`);
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = this.failWaiter = null;
      w({ value: item, done: false });
    } else {
      this.items.push(item);
    }
  }

  /** Ends the queue: what was pushed is still read, then the iteration ends (or throws `err`). */
  end(err?: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.error = err;
    if (this.waiter && this.items.length === 0) {
      const [w, f] = [this.waiter, this.failWaiter!];
      this.waiter = this.failWaiter = null;
      if (err === undefined) w({ value: undefined, done: true });
      else f(err);
    }
  }

  private discard(): void {
    this.end();
    this.items.length = 0;
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return {
      next: () => {
        if (this.items.length > 0) return Promise.resolve({ value: this.items.shift()!, done: false });
        if (this.ended) return this.error === undefined ? Promise.resolve({ value: undefined, done: true }) : Promise.reject(this.error);
        return new Promise<IteratorResult<T>>((resolve, reject) => {
          this.waiter = resolve;
          this.failWaiter = reject;
        });
      },
      // A reader that stops early (break, a failed stream) ends the queue, so a later
      // push fails loudly; throw() is how an RPC library says its stream failed.
      return: () => {
        this.discard();
        return Promise.resolve({ value: undefined, done: true });
      },
      throw: (err: unknown) => {
        this.discard();
        return Promise.reject(err);
      },
    };
  }
}
