import { LlmgwError } from '../errors.js';

// Spans and points in time as an operator writes them: a key's lifetime (`30d`), a
// rotation's grace (`24h`), the start of a usage window (`2026-12-01`, or `24h` for "the
// last 24 hours"). The admin API takes the same text as `llmgw ctl`, so a curl and a ctl
// command read alike; each parser names the field or flag it was given in its error.

const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 } as const;
const DURATION = /^(\d{1,9})(s|m|h|d|w)$/;
// A calendar date (UTC midnight), or a date-time with its zone: one without is ambiguous.
const DATE = /^\d{4}-\d{2}-\d{2}$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})$/;

export const DURATION_FORMS = 'a whole number and a unit: 90s, 15m, 24h, 30d or 2w';

/** `text` as milliseconds; `what` names the field or flag in the error. */
export function parseDuration(text: string, what: string): number {
  const m = DURATION.exec(text);
  if (m === null) throw new LlmgwError('LLMGW_INVALID_REQUEST', `${what} must be a duration, ${DURATION_FORMS}; not '${text}'`);
  return Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS];
}

/**
 * `text` as wall-clock ms: a date (`2026-12-01`, UTC midnight), a date-time with its zone
 * (`2026-12-01T08:00Z`), epoch milliseconds, or a duration meaning that long before `now`.
 */
export function parseInstant(text: string, what: string, now: number): number {
  if (/^\d{10,}$/.test(text)) return Number(text);
  if (DURATION.test(text)) return now - parseDuration(text, what);
  const at = DATE.test(text) ? Date.parse(`${text}T00:00:00Z`) : DATE_TIME.test(text) ? Date.parse(text) : NaN;
  // Date.parse rolls 2026-02-31 over into March; a date that does not come back the same is none.
  if (Number.isNaN(at) || (DATE.test(text) && new Date(at).toISOString().slice(0, 10) !== text)) {
    throw new LlmgwError(
      'LLMGW_INVALID_REQUEST',
      `${what} must be a date (2026-12-01), a date-time with its zone (2026-12-01T08:00Z), epoch milliseconds, or a duration before now (24h); not '${text}'`,
    );
  }
  return at;
}
