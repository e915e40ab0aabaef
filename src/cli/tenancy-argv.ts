// What the tenancy commands' flags mean as admin API requests: the level a command names
// (`--org|--team|--project|--key`), the limits a `limits set` changes, the query of
// `usage` and `audit`. Checked here so that a mistake names the flag the operator typed;
// the admin port checks the same again for any other client.
import { GROUPINGS } from '../admin/tenancy-bodies.js';
import { LlmgwError } from '../errors.js';
import type { ScopeKind } from '../messages/tenancy.js';
import { parseDuration, parseInstant } from '../tenancy/duration.js';

const invalid = (message: string): LlmgwError => new LlmgwError('LLMGW_INVALID_REQUEST', message);

/** The value of a limit flag that clears the field at that level. */
export const NONE = 'none';

export interface ScopeFlags {
  org?: string | undefined;
  team?: string | undefined;
  project?: string | undefined;
  key?: string | undefined;
}

/** The one level the flags name; null when none is given. */
export function scopeFromFlags(flags: ScopeFlags): { scope: ScopeKind; ref: string } | null {
  const given = (['org', 'team', 'project', 'key'] as const).filter((k) => flags[k] !== undefined);
  if (given.length > 1) throw invalid(`give one of --org, --team, --project or --key, not ${given.map((g) => `--${g}`).join(' and ')}`);
  const scope = given[0];
  if (scope === undefined) return null;
  const ref = flags[scope]!;
  if (ref === '') throw invalid(`--${scope} must name a ${scope} (its name or id)`);
  return { scope, ref };
}

/** The admin path of one level: `limits/project/chat`. */
export function levelPath(level: { scope: ScopeKind; ref: string }): string {
  return `/admin/v1/tenancy/limits/${level.scope}/${encodeURIComponent(level.ref)}`;
}

export interface LimitFlags {
  rpm?: string | undefined;
  tpm?: string | undefined;
  budget?: string | undefined;
  period?: string | undefined;
  models?: string | undefined;
  band?: string | undefined;
  profile?: string | undefined;
}

/** The body of a `limits set`: each flag given, `none` as null (cleared at this level). */
export function limitsFromFlags(flags: LimitFlags): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  const cleared = (v: string): boolean => v === NONE;
  for (const f of ['rpm', 'tpm'] as const) {
    const v = flags[f];
    if (v === undefined) continue;
    if (!cleared(v) && !/^\d+$/.test(v)) throw invalid(`--${f} must be a whole number, or ${NONE} to clear it, not '${v}'`);
    body[f] = cleared(v) ? null : Number(v);
  }
  if (flags.budget !== undefined) {
    const v = flags.budget;
    if (!cleared(v) && !/^\d+(\.\d+)?$/.test(v)) throw invalid(`--budget must be a number of units, or ${NONE} to clear it, not '${v}'`);
    body.budget = cleared(v) ? null : Number(v);
  }
  if (flags.period !== undefined) {
    if (flags.period !== 'day' && flags.period !== 'month') throw invalid(`--period must be day or month, not '${flags.period}'`);
    body.period = flags.period;
  }
  if (typeof body.budget === 'number' && body.period === undefined) throw invalid('--budget needs --period day|month: the units are spent per day or per month');
  if (body.period !== undefined && typeof body.budget !== 'number') throw invalid(`--period needs --budget UNITS (--budget ${NONE} clears the budget and its period)`);
  if (flags.models !== undefined) {
    const names = flags.models.split(',').map((m) => m.trim());
    if (flags.models === NONE) body.models = null;
    else if (names.some((m) => m === '')) throw invalid(`--models must be model names separated by commas (a,b), or ${NONE} for every model, not '${flags.models}'`);
    else body.models = names;
  }
  for (const f of ['band', 'profile'] as const) {
    const v = flags[f];
    if (v === undefined) continue;
    if (v === '') throw invalid(`--${f} must name a ${f === 'band' ? 'band' : 'routing profile'}, or be ${NONE} to clear it`);
    body[f] = cleared(v) ? null : v;
  }
  return body;
}

export interface UsageFlags extends ScopeFlags {
  by?: string | undefined;
  since?: string | undefined;
  until?: string | undefined;
}

/** `ctl usage`'s admin path; the times are checked here and read by the server's clock. */
export function usagePath(flags: UsageFlags, now: number): string {
  const q = new URLSearchParams();
  if (flags.by !== undefined) {
    if (!(GROUPINGS as readonly string[]).includes(flags.by)) throw invalid(`--by must be one of ${GROUPINGS.join(', ')}, not '${flags.by}'`);
    q.set('by', flags.by);
  }
  const since = flags.since === undefined ? null : parseInstant(flags.since, '--since', now);
  const until = flags.until === undefined ? null : parseInstant(flags.until, '--until', now);
  if (since !== null && until !== null && since >= until) throw invalid(`--since (${new Date(since).toISOString()}) must be before --until (${new Date(until).toISOString()})`);
  if (flags.since !== undefined) q.set('since', flags.since);
  if (flags.until !== undefined) q.set('until', flags.until);
  const of = scopeFromFlags(flags);
  if (of !== null) q.set('of', `${of.scope}:${of.ref}`);
  const query = q.toString();
  return `/admin/v1/tenancy/usage${query === '' ? '' : `?${query}`}`;
}

/** `ctl audit`'s admin path. */
export function auditPath(flags: { limit?: string | undefined; since?: string | undefined }, now: number): string {
  const q = new URLSearchParams();
  if (flags.limit !== undefined) {
    if (!/^\d+$/.test(flags.limit) || Number(flags.limit) < 1) throw invalid(`--limit must be a whole number of events, 1 or more, not '${flags.limit}'`);
    q.set('limit', flags.limit);
  }
  if (flags.since !== undefined) {
    parseInstant(flags.since, '--since', now);
    q.set('since', flags.since);
  }
  const query = q.toString();
  return `/admin/v1/tenancy/audit${query === '' ? '' : `?${query}`}`;
}

/** A duration flag's text, checked; the admin port reads it again. */
export function durationFlag(value: string, flag: string): string {
  parseDuration(value, flag);
  return value;
}
