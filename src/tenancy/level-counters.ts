// The counters of one level (a key, project, team or org): its rate limits' state and
// its spend. One object per level, shared by the rate limiter and the budgets, and
// reached from a resolved view's `Level` without a lookup once first used: a request
// touches four levels several times each, and a Map lookup among 100k ids costs more
// than everything else the check does (bench/tenancy-auth.ts).

export interface LevelCounters {
  /** When the requests-per-minute counter is empty again (GCRA's theoretical arrival time), wall-clock ms. */
  requestsTat: number;
  /** The same for tokens per minute. */
  tokensTat: number;
  /** Start of the UTC day `day` is for, and the units spent in it. */
  dayStart: number;
  day: number;
  monthStart: number;
  month: number;
  /** Units reserved by requests in flight, whatever the period. */
  reserved: number;
}

export class LevelStates {
  private readonly byId = new Map<string, LevelCounters>();

  /** The counters of level `id`, created empty on first use. */
  of(id: string): LevelCounters {
    let c = this.byId.get(id);
    if (!c) {
      c = { requestsTat: 0, tokensTat: 0, dayStart: 0, day: 0, monthStart: 0, month: 0, reserved: 0 };
      this.byId.set(id, c);
    }
    return c;
  }
}
