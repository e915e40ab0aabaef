// How `llmgw ctl` shows the tenancy tree, limits, usage and audit trail to a person: pure
// functions of the admin API's answers (and the clock, passed in), so specs render them
// without a server.
import type { IssuedKeyView, KeyView } from '../admin/tenancy-routes.js';
import type { AuditEvent, LimitRow, Org, Project, ScopeKind, Team, UsageGrouping, UsageRow } from '../messages/tenancy.js';
import { formatTable } from './admin-client.js';
import { ago } from './fleet-tables.js';

/** Wall-clock ms as a UTC minute: `2026-12-01 08:30Z`. */
export function stamp(at: number): string {
  return `${new Date(at).toISOString().slice(0, 16).replace('T', ' ')}Z`;
}

/** How long until wall-clock `at`, in the largest whole unit: `in 3h`. */
function inFuture(at: number, now: number): string {
  const s = Math.max(0, Math.floor((at - now) / 1000));
  if (s < 60) return `in ${s}s`;
  if (s < 3600) return `in ${Math.floor(s / 60)}m`;
  if (s < 86_400) return `in ${Math.floor(s / 3600)}h`;
  return `in ${Math.floor(s / 86_400)}d`;
}

/** Whether a key works now, and until when: `active`, `expires in 3h`, `expired 2d ago`, `revoked 4m ago`. */
export function keyState(k: KeyView, now: number): string {
  if (k.revokedAt !== null) return `revoked ${ago(k.revokedAt, now)}`;
  if (k.expiresAt === null) return 'active';
  return k.expiresAt > now ? `expires ${inFuture(k.expiresAt, now)}` : `expired ${ago(k.expiresAt, now)}`;
}

const dash = (v: string | number | null): string => (v === null || v === '' ? '-' : String(v));

export function renderOrgs(orgs: readonly Org[]): string {
  if (orgs.length === 0) return 'no organizations\n';
  return formatTable([['ID', 'NAME', 'CREATED'], ...orgs.map((o) => [o.id, o.name, stamp(o.createdAt)])]);
}

export function renderTeams(teams: readonly Team[]): string {
  if (teams.length === 0) return 'no teams\n';
  return formatTable([['ID', 'NAME', 'ORG', 'CREATED'], ...teams.map((t) => [t.id, t.name, t.orgId, stamp(t.createdAt)])]);
}

export function renderProjects(projects: readonly Project[]): string {
  if (projects.length === 0) return 'no projects\n';
  return formatTable([['ID', 'NAME', 'TEAM', 'CREATED'], ...projects.map((p) => [p.id, p.name, p.teamId, stamp(p.createdAt)])]);
}

export function renderKeys(keys: readonly KeyView[], now: number): string {
  if (keys.length === 0) return 'no keys\n';
  return formatTable([
    ['ID', 'NAME', 'PREFIX', 'PROJECT', 'STATE', 'CREATED', 'LAST USED'],
    ...keys.map((k) => [k.id, dash(k.name), `${k.prefix}…`, k.projectId, keyState(k, now), stamp(k.createdAt), ago(k.lastUsedAt, now)]),
  ]);
}

/** A created or rotated key: its record, then its text on a line of its own, said to be shown once. */
export function renderIssuedKey(issued: IssuedKeyView, now: number): string {
  return `${renderKeys([issued.record], now)}\nkey: ${issued.key}\nthis key is shown only once: store it now (llmgw keeps only its hash)\n`;
}

const LIMIT_HEADER = ['RPM', 'TPM', 'BUDGET', 'MODELS', 'BAND', 'PROFILE'];

function limitCells(l: LimitRow): string[] {
  return [dash(l.rpm), dash(l.tpm), l.budget === null ? '-' : `${l.budget}/${l.period}`, l.models === null ? 'all' : l.models.join(','), dash(l.band), dash(l.profile)];
}

export function renderLimits(rows: readonly LimitRow[]): string {
  if (rows.length === 0) return 'no limits set\n';
  return formatTable([['SCOPE', 'ID', ...LIMIT_HEADER], ...rows.map((r) => [r.scope, r.scopeId, ...limitCells(r)])]);
}

/** One level's limits after a `limits set`; null: the level has none now. */
export function renderLimitRow(row: LimitRow | null): string {
  return row === null ? 'no limits are set at this level now\n' : renderLimits([row]);
}

type Entity = Org | Team | Project | KeyView;

/** One entity as `field: value` lines, then the limits set at its level. */
export function renderShow(kind: ScopeKind, view: { entity: Entity; limits: LimitRow | null }, now: number): string {
  const e = view.entity;
  const fields: [string, string][] = [
    ['id', e.id],
    ['name', dash(e.name)],
  ];
  if ('orgId' in e) fields.push(['org', e.orgId]);
  if ('teamId' in e) fields.push(['team', e.teamId]);
  if ('projectId' in e) fields.push(['project', e.projectId], ['prefix', `${e.prefix}…`], ['state', keyState(e, now)], ['last used', ago(e.lastUsedAt, now)]);
  fields.push(['created', stamp(e.createdAt)]);
  const width = Math.max(...fields.map(([k]) => k.length)) + 1;
  const head = fields.map(([k, v]) => `${`${k}:`.padEnd(width)} ${v}\n`).join('');
  const limits = view.limits === null ? `no limits set on this ${kind}\n` : formatTable([LIMIT_HEADER, limitCells(view.limits)]);
  return `${head}\n${limits}`;
}

const GROUP_HEADER: Readonly<Record<UsageGrouping, string>> = { key: 'KEY', project: 'PROJECT', team: 'TEAM', org: 'ORG', model: 'MODEL' };

/** One line per group, heaviest first as the store answers, with a total line under them. */
export function renderUsage(rows: readonly UsageRow[], by: UsageGrouping): string {
  if (rows.length === 0) return 'no usage in this window\n';
  const sum = (f: (r: UsageRow) => number): number => rows.reduce((a, r) => a + f(r), 0);
  const units = (u: number): string => (Number.isInteger(u) ? String(u) : u.toFixed(4));
  const line = (id: string, name: string, r: Omit<UsageRow, 'id' | 'name'>): string[] => [
    id,
    name,
    String(r.requests),
    String(r.promptTokens),
    String(r.completionTokens),
    String(r.cachedTokens),
    units(r.units),
    String(r.errors),
  ];
  const total = {
    requests: sum((r) => r.requests),
    promptTokens: sum((r) => r.promptTokens),
    completionTokens: sum((r) => r.completionTokens),
    cachedTokens: sum((r) => r.cachedTokens),
    units: sum((r) => r.units),
    errors: sum((r) => r.errors),
  };
  return formatTable([
    [GROUP_HEADER[by], 'NAME', 'REQUESTS', 'PROMPT', 'COMPLETION', 'CACHED', 'UNITS', 'ERRORS'],
    // A request refused before its body was read (a 401) names no model.
    ...rows.map((r) => line(r.id === '' ? '(none)' : r.id, dash(r.name), r)),
    line('total', '', total),
  ]);
}

/** Newest first, as the store answers: when, who, what, on which entity, and what changed. */
export function renderAudit(events: readonly AuditEvent[]): string {
  if (events.length === 0) return 'no audit events\n';
  return formatTable([['AT', 'ACTOR', 'ACTION', 'TARGET', 'DETAIL'], ...events.map((e) => [stamp(e.at), e.actor, e.action, `${e.targetKind} ${e.targetId}`, JSON.stringify(e.detail)])]);
}
