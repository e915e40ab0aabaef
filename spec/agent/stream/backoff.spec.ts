import * as assert from 'uvu/assert';
import { DEFAULT_BACKOFF, reconnectDelayMs, type BackoffPolicy } from '../../../src/agent/stream/backoff.js';
import { suite } from '../../support/uvu.js';
import { mulberry32 } from '../../support/rng.js';


const POLICY: BackoffPolicy = { baseMs: 500, maxMs: 30_000 };
const FLEET = 1000;

/**
 * When each of `fleet` agents that lost the stream together at t=0 dials for the
 * `failures + 1`-th time, every earlier dial having failed: the sum of its waits.
 */
function dialTimes(failures: number, random: (agent: number) => () => number): number[] {
  return Array.from({ length: FLEET }, (_, agent) => {
    const r = random(agent);
    let t = 0;
    for (let attempt = 0; attempt <= failures; attempt++) t += reconnectDelayMs(attempt, POLICY, r);
    return t;
  });
}

/** The most agents that dial within any one `windowMs` of each other. */
function busiestWindow(times: readonly number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  for (let lo = 0, hi = 0; hi < sorted.length; hi++) {
    while (sorted[hi]! - sorted[lo]! >= windowMs) lo++;
    most = Math.max(most, hi - lo + 1);
  }
  return most;
}

const test = suite('agent stream: reconnect backoff');

test('each wait is below base × 2^attempt, capped at maxMs, and never negative', () => {
  const justBelowOne = (): number => 1 - Number.EPSILON;
  assert.equal([0, 1, 2, 3, 4, 5, 6, 7].map((a) => reconnectDelayMs(a, POLICY, justBelowOne)), [499, 999, 1999, 3999, 7999, 15_999, 29_999, 29_999]);
  assert.is(reconnectDelayMs(0, POLICY, () => 0), 0);
  assert.is(reconnectDelayMs(5000, POLICY, justBelowOne), 29_999, 'a huge attempt count neither overflows nor exceeds the cap');
  assert.is(reconnectDelayMs(-3, POLICY, justBelowOne), 499, 'a negative attempt counts as the first');
  assert.ok(DEFAULT_BACKOFF.baseMs > 0 && DEFAULT_BACKOFF.maxMs >= DEFAULT_BACKOFF.baseMs);
});

test('1,000 agents that lost the stream together do not reconnect in lockstep', () => {
  for (const failures of [0, 2, 5, 8]) {
    const times = dialTimes(failures, (agent) => mulberry32(0x5eed + agent));
    const span = Math.max(...times) - Math.min(...times);
    // The widest single wait among these attempts: the dials spread over a good part of it.
    const widest = Math.min(POLICY.maxMs, POLICY.baseMs * 2 ** failures);
    assert.ok(span > 0.5 * widest, `after ${failures} failures the fleet dials over ${span} ms only (widest wait ${widest} ms)`);
    // Uniform spreading puts ~1% of the fleet in a window 1% of the widest wait long; lockstep puts all of it there.
    const most = busiestWindow(times, widest / 100);
    assert.ok(most <= 0.04 * FLEET, `after ${failures} failures ${most} of ${FLEET} agents dial within ${widest / 100} ms of each other`);
  }
});

test('the same measure catches a fleet without jitter: every agent dials at the same instant', () => {
  const times = dialTimes(3, () => () => 0.5);
  assert.is(busiestWindow(times, 1), FLEET);
});

test.run();
