// Requests and tokens per minute per level: what passes, what is refused, and the
// reset and retry-after a client is told.
import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { LevelStates } from '../../src/tenancy/level-counters.js';
import type { Level } from '../../src/tenancy/limits.js';
import { RateLimiter } from '../../src/tenancy/rate-limiter.js';

const level = (id: string, rpm: number | null, tpm: number | null = null): Level => ({ scope: 'key', id, rpm, tpm, budget: null, period: null, counters: null });

test('5 rpm: five at once, the sixth refused with a retry-after of 12 s, then one more every 12 s', () => {
  const r = new RateLimiter(new LevelStates());
  const chain = [level('key_a', 5)];
  for (let i = 0; i < 5; i++) {
    const { verdict } = r.admit(chain, 0, 1_000);
    assert.ok(verdict.ok);
    assert.equal(verdict.requests, { limit: 5, remaining: 4 - i, resetMs: 12_000 * (i + 1) });
  }
  const sixth = r.admit(chain, 0, 1_000).verdict;
  assert.ok(!sixth.ok);
  if (!sixth.ok) {
    assert.is(sixth.kind, 'requests');
    assert.is(sixth.retryAfterMs, 12_000);
    assert.equal(sixth.requests, { limit: 5, remaining: 0, resetMs: 60_000 });
  }
  assert.not.ok(r.admit(chain, 0, 12_999).verdict.ok);
  assert.ok(r.admit(chain, 0, 13_000).verdict.ok);
});

test('a level refused takes nothing from the others: the check is all or nothing', () => {
  const r = new RateLimiter(new LevelStates());
  const key = level('key_a', 100);
  const project = level('proj_a', 1);
  assert.ok(r.admit([key, project], 0, 0).verdict.ok);
  const refused = r.admit([key, project], 0, 0).verdict;
  assert.ok(!refused.ok && refused.level.id === 'proj_a');
  // The key's own counter holds the one request that passed, not the refused one: this is its second.
  const alone = r.admit([key], 0, 0).verdict;
  assert.ok(alone.ok && alone.requests.remaining === 98);
});

test('tokens are reserved at admission and corrected at settle', () => {
  const r = new RateLimiter(new LevelStates());
  const chain = [level('key_a', null, 1_000)];
  const first = r.admit(chain, 800, 0);
  assert.ok(first.verdict.ok);
  const refused = r.admit(chain, 300, 0).verdict;
  assert.ok(!refused.ok && refused.kind === 'tokens');
  if (!refused.ok) assert.is(Math.round(refused.retryAfterMs), 6_000, '100 tokens over, at 1000 a minute');
  // The first used only 200: the other 600 are free again at once.
  r.settle(first.hold!, 200, 0);
  const second = r.admit(chain, 300, 0).verdict;
  assert.ok(second.ok && second.tokens.remaining === 500);
});

test('a request larger than a minute of tokens goes when the counter is empty, not never', () => {
  const r = new RateLimiter(new LevelStates());
  const chain = [level('key_a', null, 100)];
  assert.ok(r.admit(chain, 5_000, 0).verdict.ok);
  assert.not.ok(r.admit(chain, 5_000, 59_000).verdict.ok);
});

test.run();
