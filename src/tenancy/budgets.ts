import type { BudgetPeriod, KeySpend } from '../messages/tenancy.js';
import type { LevelCounters, LevelStates } from './level-counters.js';
import type { Level } from './limits.js';

// Units spent per level in the current UTC day and month. Every level of a chain
// counts every request, budget or not, so a budget set later (or its period changed)
// starts from what was really spent. At start the counters are restored from the
// store's snapshot, whose per-key spend is summed up each key's chain.
//
// A request reserves its priced estimate when admitted and settles with its real cost;
// a level is spent once what it spent plus what is reserved in flight reaches its
// budget. So a budget is overshot by at most what requests already admitted cost
// beyond their estimate, never by requests admitted after it ran out.

/** A request's reservation on its chain; settled or released once. */
export interface BudgetHold {
  readonly levels: readonly Level[];
  readonly units: number;
  done: boolean;
}

/** The level whose budget is spent. */
export interface Exhausted {
  level: Level;
  budget: number;
  period: BudgetPeriod;
  spent: number;
}

export class Budgets {
  /** `chainOf` names a key's levels innermost first (the key's id first); null when it is not known. */
  constructor(
    private readonly states: LevelStates,
    spend: readonly KeySpend[],
    chainOf: (keyId: string) => readonly string[] | null,
  ) {
    for (const s of spend) {
      for (const id of chainOf(s.keyId) ?? [s.keyId]) {
        const c = states.of(id);
        c.day = add(c.dayStart, c.day, s.dayStart, s.day);
        c.dayStart = Math.max(c.dayStart, s.dayStart);
        c.month = add(c.monthStart, c.month, s.monthStart, s.month);
        c.monthStart = Math.max(c.monthStart, s.monthStart);
      }
    }
  }

  /** The first level on the chain whose budget is spent at `now`, or null. */
  exhausted(levels: readonly Level[], now: number): Exhausted | null {
    for (const level of levels) {
      if (level.budget === null) continue;
      const period = level.period ?? 'month';
      const c = (level.counters ??= this.states.of(level.id));
      const spent = spentIn(c, period, now);
      if (spent + c.reserved >= level.budget) return { level, budget: level.budget, period, spent };
    }
    return null;
  }

  /**
   * The first level whose budget a request in flight now takes past it, at `running`
   * units so far in place of its reservation (`tenancy.hard_budgets`); null: none.
   */
  overrun(hold: BudgetHold, running: number, now: number): Exhausted | null {
    for (const level of hold.levels) {
      if (level.budget === null) continue;
      const period = level.period ?? 'month';
      const c = (level.counters ??= this.states.of(level.id));
      const spent = spentIn(c, period, now);
      if (spent + c.reserved - hold.units + running > level.budget) return { level, budget: level.budget, period, spent };
    }
    return null;
  }

  reserve(levels: readonly Level[], units: number): BudgetHold {
    for (const level of levels) (level.counters ??= this.states.of(level.id)).reserved += units;
    return { levels, units, done: false };
  }

  /** The request cost `units`: charged to the periods of `now`, its reservation returned. */
  settle(hold: BudgetHold, units: number, now: number): void {
    if (hold.done) return;
    hold.done = true;
    const day = dayStartOf(now);
    const month = monthStartOf(now);
    for (const level of hold.levels) {
      const c = (level.counters ??= this.states.of(level.id));
      c.reserved -= hold.units;
      roll(c, day, month);
      c.day += units;
      c.month += units;
    }
  }

  /** The request was refused after its reservation: nothing is charged. */
  release(hold: BudgetHold): void {
    if (hold.done) return;
    hold.done = true;
    for (const level of hold.levels) (level.counters ??= this.states.of(level.id)).reserved -= hold.units;
  }

  /** Units spent by level `id` in the period of `now` that `period` names. */
  spent(id: string, period: BudgetPeriod, now: number): number {
    return spentIn(this.states.of(id), period, now);
  }
}

function spentIn(c: LevelCounters, period: BudgetPeriod, now: number): number {
  return period === 'day' ? (c.dayStart === dayStartOf(now) ? c.day : 0) : c.monthStart === monthStartOf(now) ? c.month : 0;
}

/** A level's figure for the later of two periods: the sum when both are for the same one. */
function add(startA: number, a: number, startB: number, b: number): number {
  return startA === startB ? a + b : startA > startB ? a : b;
}

function roll(c: LevelCounters, day: number, month: number): void {
  if (c.dayStart !== day) {
    c.dayStart = day;
    c.day = 0;
  }
  if (c.monthStart !== month) {
    c.monthStart = month;
    c.month = 0;
  }
}

const DAY_MS = 86_400_000;

/** UTC midnight of the day `now` falls in. */
export function dayStartOf(now: number): number {
  return now - (((now % DAY_MS) + DAY_MS) % DAY_MS);
}

/** UTC midnight of the first of the month `now` falls in. */
export function monthStartOf(now: number): number {
  // Every request asks, and nearly all within the month last asked about: no Date then.
  if (now >= month.from && now < month.to) return month.from;
  const d = new Date(now);
  month.from = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  month.to = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  return month.from;
}

const month = { from: 0, to: 0 };
