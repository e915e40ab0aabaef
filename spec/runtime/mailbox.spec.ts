import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { Mailbox } from '../../src/runtime/mailbox.js';
import { stopWaves } from '../../src/runtime/stop-order.js';

test('mailbox: FIFO across the ring boundary, with a high-water mark', () => {
  const m = new Mailbox<number>({ capacity: 3, overflow: 'reject' });
  const out: number[] = [];
  for (let i = 0; i < 10; i++) {
    m.push(i);
    if (i % 2 === 1) out.push(m.shift()!, m.shift()!);
  }
  assert.equal(out, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  assert.is(m.size, 0);
  assert.is(m.highWater, 2);
});

test('mailbox: reject refuses the newest and counts it', () => {
  const m = new Mailbox<number>({ capacity: 2, overflow: 'reject' });
  assert.ok(m.push(1));
  assert.ok(m.push(2));
  assert.is(m.push(3), false);
  assert.is(m.rejected, 1);
  assert.is(m.shift(), 1);
});

test('mailbox: drop-oldest hands the evicted item over', () => {
  const m = new Mailbox<number>({ capacity: 2, overflow: 'drop-oldest' });
  const evicted: number[] = [];
  m.push(1);
  m.push(2);
  assert.ok(m.push(3, (x) => evicted.push(x)));
  assert.equal(evicted, [1]);
  assert.is(m.dropped, 1);
  const rest: number[] = [];
  m.drainTo((x) => rest.push(x));
  assert.equal(rest, [2, 3]);
});

test('mailbox: drop-oldest spares what the caller protects while anything else is queued', () => {
  const m = new Mailbox<string>({ capacity: 3, overflow: 'drop-oldest' });
  const evicted: string[] = [];
  const keep = (x: string): boolean => x.startsWith('ask');
  const push = (x: string): boolean => m.push(x, (d) => evicted.push(d), keep);
  // Wrap the ring first, so the gap is closed across its boundary.
  push('t0');
  push('t1');
  m.shift();
  m.shift();
  push('ask1');
  push('t2');
  push('ask2');
  for (const t of ['t3', 't4', 't5']) assert.ok(push(t));
  assert.equal(evicted, ['t2', 't3', 't4']);
  // Only protected items left ahead of the new one: the oldest of them goes.
  push('ask3');
  assert.equal(evicted, ['t2', 't3', 't4', 't5']);
  push('t6');
  assert.equal(evicted, ['t2', 't3', 't4', 't5', 'ask1']);
  const rest: string[] = [];
  m.drainTo((x) => rest.push(x));
  assert.equal(rest, ['ask2', 'ask3', 't6']);
  assert.is(m.dropped, 5);
});

test('mailbox: a capacity below 1 is refused', () => {
  assert.throws(() => new Mailbox({ capacity: 0, overflow: 'reject' }), /capacity/);
});

test('stop order: dependents and children stop before what they need', () => {
  const { waves, cycle } = stopWaves([
    { name: 'store', parent: null, dependsOn: [] },
    { name: 'usage', parent: null, dependsOn: ['store'] },
    { name: 'router', parent: null, dependsOn: ['usage'] },
    { name: 'pollers', parent: null, dependsOn: [] },
    { name: 'poller-a', parent: 'pollers', dependsOn: ['router'] },
  ]);
  assert.equal(waves, [['poller-a'], ['pollers', 'router'], ['usage'], ['store']]);
  assert.equal(cycle, []);
});

test('stop order: a cycle is stopped last, together, and reported', () => {
  const { waves, cycle } = stopWaves([
    { name: 'a', parent: null, dependsOn: ['b'] },
    { name: 'b', parent: null, dependsOn: ['a'] },
    { name: 'c', parent: null, dependsOn: ['unknown'] },
  ]);
  assert.equal(waves, [['c'], ['a', 'b']]);
  assert.equal(cycle, ['a', 'b']);
});

test.run();
