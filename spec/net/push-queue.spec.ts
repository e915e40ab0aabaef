import * as assert from 'uvu/assert';
import { LlmgwError } from '../../src/errors.js';
import { PushQueue } from '../../src/net/push-queue.js';
import { suite } from '../support/uvu.js';

const test = suite('push queue');

test('items pushed before and while a reader waits arrive in order, then the end', async () => {
  const q = new PushQueue<number>();
  q.push(1);
  const it = q[Symbol.asyncIterator]();
  assert.equal(await it.next(), { value: 1, done: false });
  const waiting = it.next();
  q.push(2);
  assert.equal(await waiting, { value: 2, done: false });
  q.push(3);
  q.end();
  assert.equal(await it.next(), { value: 3, done: false }, 'what was pushed before the end is still read');
  assert.equal(await it.next(), { value: undefined, done: true });
});

test('an end with an error fails the reader, waiting or not', async () => {
  const q = new PushQueue<number>();
  const it = q[Symbol.asyncIterator]();
  const waiting = it.next();
  q.end(new Error('gone'));
  await waiting.then(
    () => assert.unreachable('resolved'),
    (err: Error) => assert.is(err.message, 'gone'),
  );
  await it.next().then(
    () => assert.unreachable('resolved'),
    (err: Error) => assert.is(err.message, 'gone'),
  );
});

test('a push after the end, or after the reader stopped, throws LLMGW_STREAM_CLOSED', async () => {
  const ended = new PushQueue<number>();
  ended.end();
  assert.throws(() => ended.push(1), (err: unknown) => err instanceof LlmgwError && err.code === 'LLMGW_STREAM_CLOSED');

  const q = new PushQueue<number>();
  q.push(1);
  for await (const _ of q) break; // the reader stops early
  assert.is(q.open, false);
  assert.throws(() => q.push(2), (err: unknown) => err instanceof LlmgwError && err.code === 'LLMGW_STREAM_CLOSED');

  const thrown = new PushQueue<number>();
  await thrown[Symbol.asyncIterator]().throw!(new Error('stream failed')).catch(() => {});
  assert.is(thrown.open, false, 'throw() from the RPC library ends the queue');
});

test.run();
