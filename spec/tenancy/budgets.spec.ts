// Budgets per level and period: reserve, settle, release, the UTC period rollover, and
// the spend restored from the store's snapshot up each key's chain.
import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { LevelStates } from '../../src/tenancy/level-counters.js';
import { Budgets, dayStartOf, monthStartOf } from '../../src/tenancy/budgets.js';
import type { Level } from '../../src/tenancy/limits.js';

const T0 = Date.UTC(2026, 2, 31, 23, 0); // an hour before a new day and month
const level = (scope: Level['scope'], id: string, budget: number | null, period: Level['period'] = 'day'): Level => ({ scope, id, rpm: null, tpm: null, budget, period: budget === null ? null : period, counters: null });
const chain = (keyBudget: number | null, projBudget: number | null, period: Level['period'] = 'day'): Level[] => [level('key', 'key_a', keyBudget, period), level('project', 'proj_a', projBudget, period)];
const chainOf = (id: string): string[] | null => (id === 'key_a' || id === 'key_b' ? [id, 'proj_a', 'team_a', 'org_a'] : null);

test('a reservation counts against the budget until it settles with the real cost', () => {
  const b = new Budgets(new LevelStates(), [], chainOf);
  const levels = chain(100, null);
  const hold = b.reserve(levels, 60);
  assert.is(b.exhausted(levels, T0), null, '60 reserved of 100');
  const second = b.reserve(levels, 40);
  assert.is(b.exhausted(levels, T0)?.level.id, 'key_a', '100 reserved: spent for a third request');
  b.settle(hold, 10, T0);
  b.release(second);
  assert.is(b.exhausted(levels, T0), null);
  assert.is(b.spent('key_a', 'day', T0), 10);
  b.settle(hold, 10, T0);
  assert.is(b.spent('key_a', 'day', T0), 10, 'a hold settles once');
});

test('each level counts on its own: a project budget binds every key under it', () => {
  const b = new Budgets(new LevelStates(), [], chainOf);
  b.settle(b.reserve([level('key', 'key_a', null), level('project', 'proj_a', 50)], 0), 50, T0);
  const other = [level('key', 'key_b', 1_000), level('project', 'proj_a', 50)];
  assert.equal(b.exhausted(other, T0), { level: other[1]!, budget: 50, period: 'day', spent: 50 });
});

test('a new UTC day starts a daily budget over; a monthly one carries on within the month', () => {
  const b = new Budgets(new LevelStates(), [], chainOf);
  b.settle(b.reserve(chain(100, null), 0), 100, T0);
  assert.ok(b.exhausted(chain(100, null, 'day'), T0));
  assert.ok(b.exhausted(chain(100, null, 'month'), T0));
  const nextDay = T0 + 3_600_000;
  assert.is(b.exhausted(chain(100, null, 'day'), nextDay), null);
  assert.is(b.exhausted(chain(100, null, 'month'), nextDay), null, 'the next day is also the next month here');
  assert.is(b.spent('key_a', 'month', T0 - 86_400_000), 100, 'the day before is the same month');
  assert.is(b.spent('key_a', 'month', Date.UTC(2026, 1, 15)), 0, 'a figure is for its own period only');
});

test('spend restored from the snapshot is summed up each key’s chain', () => {
  const day = dayStartOf(T0);
  const month = monthStartOf(T0);
  const b = new Budgets(new LevelStates(), 
    [
      { keyId: 'key_a', dayStart: day, day: 30, monthStart: month, month: 300 },
      { keyId: 'key_b', dayStart: day, day: 20, monthStart: month, month: 200 },
      // A figure from an earlier day counts for the month only.
      { keyId: 'key_b', dayStart: day - 86_400_000, day: 7, monthStart: month, month: 0 },
    ],
    chainOf,
  );
  assert.is(b.spent('key_a', 'day', T0), 30);
  assert.is(b.spent('proj_a', 'day', T0), 50);
  assert.is(b.spent('org_a', 'month', T0), 500);
  assert.ok(b.exhausted([level('team', 'team_a', 50)], T0));
});

test('UTC period starts', () => {
  assert.is(dayStartOf(Date.UTC(2026, 0, 15, 13, 5)), Date.UTC(2026, 0, 15));
  assert.is(monthStartOf(Date.UTC(2026, 0, 15, 13, 5)), Date.UTC(2026, 0, 1));
});

test.run();
