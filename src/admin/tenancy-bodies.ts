// What the tenancy routes accept, checked before the store is asked: each request body
// and query as the protocol's values, or a 400 that names the field and what it takes.
// Pure functions of the parsed JSON and the clock, so specs check every refusal directly.
import { LlmgwError } from '../errors.js';
import type { BudgetPeriod, Limits, ScopeKind, UsageGrouping, UsageQuery } from '../messages/tenancy.js';
import { parseDuration, parseInstant } from '../tenancy/duration.js';

export const SCOPES: readonly ScopeKind[] = ['org', 'team', 'project', 'key'];
export const GROUPINGS: readonly UsageGrouping[] = ['key', 'project', 'team', 'org', 'model'];
const PERIODS: readonly BudgetPeriod[] = ['day', 'month'];
const MAX_NAME = 128;
export const DEFAULT_AUDIT_LIMIT = 100;
const MAX_AUDIT_LIMIT = 10_000;
/** A rotated key's old text keeps working this long unless the body says otherwise. */
export const DEFAULT_GRACE_MS = 24 * 3_600_000;

type Body = Record<string, unknown>;

const invalid = (message: string): LlmgwError => new LlmgwError('LLMGW_INVALID_REQUEST', message);

/** The body as a JSON object; an empty body is `{}` (a rotation with the default grace). */
export function parseJsonObject(text: string): Body {
  if (text.trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw invalid(`the body is not JSON: ${(err as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid('the body must be a JSON object');
  return value as Body;
}

function onlyFields(body: Body, allowed: readonly string[], what: string): void {
  for (const k of Object.keys(body)) {
    if (!allowed.includes(k)) throw invalid(`unknown field '${k}' in the body of ${what}; it takes ${allowed.join(', ')}`);
  }
}

/** A name or a reference: a non-empty string of at most 128 characters, no control characters. */
function nameField(body: Body, field: string, what: string): string {
  const v = body[field];
  if (v === undefined) throw invalid(`${what} needs '${field}'`);
  if (typeof v !== 'string') throw invalid(`'${field}' must be a string, not ${typeOf(v)}`);
  return checkName(v, `'${field}'`);
}

export function checkName(v: string, what: string): string {
  if (v === '' || v.length > MAX_NAME) throw invalid(`${what} must be 1 to ${MAX_NAME} characters, not ${v.length}`);
  if (/[\u0000-\u001f\u007f]/.test(v)) throw invalid(`${what} must not contain control characters`);
  return v;
}

function typeOf(v: unknown): string {
  return v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v === 'object' ? 'an object' : `a ${typeof v} (${JSON.stringify(v)})`;
}

export function createOrgBody(body: Body): { name: string } {
  onlyFields(body, ['name'], 'an organization');
  return { name: nameField(body, 'name', 'an organization') };
}

export function createTeamBody(body: Body): { name: string; org: string } {
  onlyFields(body, ['name', 'org'], 'a team');
  return { name: nameField(body, 'name', 'a team'), org: nameField(body, 'org', 'a team') };
}

export function createProjectBody(body: Body): { name: string; team: string } {
  onlyFields(body, ['name', 'team'], 'a project');
  return { name: nameField(body, 'name', 'a project'), team: nameField(body, 'team', 'a project') };
}

/** `expiresIn` is a duration from now (`30d`), or null/absent for a key that never expires. */
export function createKeyBody(body: Body, now: number): { project: string; name: string; expiresAt: number | null } {
  onlyFields(body, ['project', 'name', 'expiresIn'], 'a key');
  const project = nameField(body, 'project', 'a key');
  const name = body.name === undefined ? '' : nameField(body, 'name', 'a key');
  const expiresIn = body.expiresIn;
  if (expiresIn === undefined || expiresIn === null) return { project, name, expiresAt: null };
  if (typeof expiresIn !== 'string') throw invalid(`'expiresIn' must be a duration such as "30d", or null, not ${typeOf(expiresIn)}`);
  const ms = parseDuration(expiresIn, "'expiresIn'");
  if (ms === 0) throw invalid("'expiresIn' must be longer than 0: a key that expires at once is revoked, not created");
  return { project, name, expiresAt: now + ms };
}

/** `grace`: how long the old key keeps working, a duration (`24h`, the default; `0s` stops it now). */
export function rotateKeyBody(body: Body): { graceMs: number } {
  onlyFields(body, ['grace'], 'a rotation');
  const grace = body.grace;
  if (grace === undefined) return { graceMs: DEFAULT_GRACE_MS };
  if (typeof grace !== 'string') throw invalid(`'grace' must be a duration such as "24h", not ${typeOf(grace)}`);
  return { graceMs: parseDuration(grace, "'grace'") };
}

export function revokeKeyBody(body: Body): void {
  onlyFields(body, [], 'a revocation');
}

const LIMIT_FIELDS = ['rpm', 'tpm', 'budget', 'period', 'models', 'band', 'profile'] as const satisfies readonly (keyof Limits)[];

/**
 * The fields a `set` changes: absent keeps a field, null clears it. A budget and its
 * period go together: a budget without a period (or the reverse) has no meaning, and
 * clearing the budget clears its period.
 */
export function limitsBody(body: Body): Partial<Limits> {
  onlyFields(body, LIMIT_FIELDS, 'a limits set');
  if (Object.keys(body).length === 0) throw invalid(`a limits set needs at least one of ${LIMIT_FIELDS.join(', ')} (null clears one; DELETE clears them all)`);
  const out: Partial<Limits> = {};
  for (const f of ['rpm', 'tpm'] as const) {
    const v = body[f];
    if (v === undefined) continue;
    if (v !== null && !(typeof v === 'number' && Number.isInteger(v) && v >= 0)) throw invalid(`'${f}' must be a whole number of 0 or more, or null to clear it, not ${typeOf(v)}`);
    out[f] = v;
  }
  const budget = body.budget;
  if (budget !== undefined) {
    if (budget !== null && !(typeof budget === 'number' && Number.isFinite(budget) && budget >= 0)) throw invalid(`'budget' must be a number of units of 0 or more, or null to clear it, not ${typeOf(budget)}`);
    out.budget = budget;
  }
  const period = body.period;
  if (period !== undefined) {
    if (period !== null && !(PERIODS as readonly unknown[]).includes(period)) throw invalid(`'period' must be one of ${PERIODS.join(', ')}, or null, not ${typeOf(period)}`);
    out.period = period as BudgetPeriod | null;
  }
  if (out.budget === null && out.period === undefined) out.period = null;
  if (typeof out.budget === 'number' && (out.period === undefined || out.period === null)) throw invalid(`a budget needs its period: set 'period' to ${PERIODS.join(' or ')} with it`);
  if (typeof out.period === 'string' && typeof out.budget !== 'number') throw invalid("a period needs its budget: set 'budget' (units per period) with it");
  if (out.budget === undefined && out.period === null) throw invalid("'period' is cleared with its budget: send \"budget\": null");
  const models = body.models;
  if (models !== undefined) {
    if (models !== null && !(Array.isArray(models) && models.length > 0 && models.every((m) => typeof m === 'string' && m !== ''))) {
      throw invalid(`'models' must be a non-empty array of model names, or null for every model, not ${typeOf(models)}`);
    }
    out.models = models as string[] | null;
  }
  for (const f of ['band', 'profile'] as const) {
    const v = body[f];
    if (v === undefined) continue;
    if (v !== null && !(typeof v === 'string' && v !== '')) throw invalid(`'${f}' must be a name, or null to clear it, not ${typeOf(v)}`);
    out[f] = v;
  }
  return out;
}

export function scopeOf(text: string, what: string): ScopeKind {
  if (!(SCOPES as readonly string[]).includes(text)) throw invalid(`${what} must be one of ${SCOPES.join(', ')}, not '${text}'`);
  return text as ScopeKind;
}

/** `?by=&since=&until=&of=SCOPE:REF`; `by` defaults to key. */
export function usageQuery(q: URLSearchParams, now: number): UsageQuery {
  onlyParams(q, ['by', 'since', 'until', 'of'], 'usage');
  const by = q.get('by') ?? 'key';
  if (!(GROUPINGS as readonly string[]).includes(by)) throw invalid(`by must be one of ${GROUPINGS.join(', ')}, not '${by}'`);
  const since = instantParam(q, 'since', now);
  const until = instantParam(q, 'until', now);
  if (since !== null && until !== null && since >= until) throw invalid(`since (${new Date(since).toISOString()}) must be before until (${new Date(until).toISOString()})`);
  const ofText = q.get('of');
  let of: UsageQuery['of'] = null;
  if (ofText !== null) {
    const colon = ofText.indexOf(':');
    if (colon < 0) throw invalid(`of must be SCOPE:REF (e.g. project:chatbot), not '${ofText}'`);
    of = { scope: scopeOf(ofText.slice(0, colon), 'the scope of of'), ref: checkName(ofText.slice(colon + 1), 'the reference of of') };
  }
  return { by: by as UsageGrouping, since, until, of };
}

/** `?limit=&since=`: the most recent events first, at most `limit` (default 100). */
export function auditQuery(q: URLSearchParams, now: number): { limit: number; since: number | null } {
  onlyParams(q, ['limit', 'since'], 'audit');
  const text = q.get('limit');
  const limit = text === null ? DEFAULT_AUDIT_LIMIT : /^\d+$/.test(text) ? Number(text) : NaN;
  if (!(limit >= 1 && limit <= MAX_AUDIT_LIMIT)) throw invalid(`limit must be a whole number from 1 to ${MAX_AUDIT_LIMIT}, not '${text}'`);
  return { limit, since: instantParam(q, 'since', now) };
}

/** `?parent=`: the organization of teams, the team of projects, the project of keys. */
export function listParent(kind: ScopeKind, q: URLSearchParams): string | null {
  onlyParams(q, ['parent'], `the list of ${kind}s`);
  const parent = q.get('parent');
  if (parent === null) return null;
  if (kind === 'org') throw invalid('organizations have no parent: list them without ?parent=');
  return checkName(parent, 'parent');
}

function onlyParams(q: URLSearchParams, allowed: readonly string[], what: string): void {
  for (const k of q.keys()) {
    if (!allowed.includes(k)) throw invalid(`unknown parameter '${k}' for ${what}; it takes ${allowed.join(', ')}`);
  }
}

function instantParam(q: URLSearchParams, name: string, now: number): number | null {
  const text = q.get(name);
  return text === null ? null : parseInstant(text, name, now);
}
