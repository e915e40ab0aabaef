import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { EndpointHealth, type BreakerState } from '../../src/router/endpoint-health.js';

const policy = { cooldownFailures: 2, cooldownMs: 100, breakerFailures: 4, openMs: 1_000, maxOpenMs: 3_000 };

function make(): { h: EndpointHealth; moves: string[] } {
  const moves: string[] = [];
  const h = new EndpointHealth(policy, (from: BreakerState, to: BreakerState) => moves.push(`${from}→${to}`));
  return { h, moves };
}

test('one failure changes nothing; two start a cooldown that ends by itself', () => {
  const { h } = make();
  h.failed(0);
  assert.is(h.blocked(0), null);
  h.failed(10);
  assert.match(h.blocked(10) ?? '', /cooling down for 100 ms after 2 failures/);
  assert.is(h.blocked(110), null);
  assert.is(h.breakerAt(110), 'closed');
});

test('a success ends a cooldown at once: a request sent before it came back fine', () => {
  const { h } = make();
  h.failed(0);
  h.failed(0);
  assert.match(h.blocked(10) ?? '', /cooling down/);
  h.succeeded();
  assert.is(h.blocked(10), null);
});

test('a success resets the count: failures must be consecutive', () => {
  const { h } = make();
  for (let i = 0; i < 3; i++) h.failed(0);
  h.succeeded();
  for (let i = 0; i < 3; i++) h.failed(1);
  assert.is(h.breakerAt(1), 'closed');
  assert.is(h.consecutiveFailures, 3);
});

test('the breaker opens, lets one trial through after its pause, and closes on success', () => {
  const { h, moves } = make();
  for (let i = 0; i < 4; i++) h.failed(0);
  assert.is(h.breakerAt(0), 'open');
  assert.match(h.blocked(500) ?? '', /circuit breaker open for 1 s more after 4 failures/);
  assert.is(h.breakerAt(1_000), 'half-open', 'the pause is over');
  assert.is(h.blocked(1_000), null, 'one trial may go');
  h.begin(1_000);
  assert.match(h.blocked(1_001) ?? '', /trial request is in flight/, 'and only one');
  h.succeeded();
  assert.is(h.breakerAt(1_002), 'closed');
  assert.is(h.blocked(1_002), null);
  assert.equal(moves, ['closed→open', 'open→half-open', 'half-open→closed']);
});

test('a failed trial reopens for twice as long, up to the cap, then lets the next trial through; a success resets the pause', () => {
  const { h, moves } = make();
  for (let i = 0; i < 4; i++) h.failed(0);
  // Each trial goes the moment the pause ends: a pause that did not grow would let it through earlier.
  let now = 1_000;
  for (const pause of [2_000, 3_000, 3_000]) {
    assert.is(h.blocked(now - 1), `circuit breaker open for 1 s more after ${h.consecutiveFailures} failures`);
    assert.is(h.blocked(now), null, `the trial at ${now} may go`);
    h.begin(now);
    h.failed(now);
    assert.match(h.blocked(now + pause - 1) ?? '', /circuit breaker open for 1 s more/, `open for ${pause} ms`);
    now += pause;
  }
  assert.is(h.blocked(now), null, 'tried again after the longest pause');
  h.begin(now);
  assert.match(h.blocked(now) ?? '', /trial request is in flight/);
  h.succeeded();
  assert.equal(moves, ['closed→open', ...Array(3).fill(['open→half-open', 'half-open→open']).flat(), 'open→half-open', 'half-open→closed']);
  for (let i = 0; i < 4; i++) h.failed(now);
  assert.ok(h.blocked(now + 999) !== null);
  assert.is(h.blocked(now + 1_000), null, 'back to the base pause');
});

test('a client leaving during the trial frees the trial slot without judging the endpoint', () => {
  const { h } = make();
  for (let i = 0; i < 4; i++) h.failed(0);
  h.begin(1_000);
  h.abandoned();
  assert.is(h.blocked(1_000), null);
  assert.is(h.breakerAt(1_000), 'half-open');
});

test.run();
