import type { ApiKey, BudgetPeriod, LimitRow, Org, Project, ScopeKind, Team } from '../../messages/tenancy.js';
import type { Entity } from './tenancy-store.js';

// Rows of the SQLite store as the domain's types.

export type Row = Record<string, unknown>;

/** SQLite hands back integers past 2^53 as bigint; ours never are. */
export function num(v: unknown): number {
  return v === null || v === undefined ? 0 : Number(v);
}

function nullableNum(v: unknown): number | null {
  return v === null || v === undefined ? null : Number(v);
}

function nullableStr(v: unknown): string | null {
  return v === null || v === undefined ? null : String(v);
}

export function toOrg(r: Row): Org {
  return { id: String(r.id), name: String(r.name), createdAt: num(r.created_at) };
}

export function toTeam(r: Row): Team {
  return { id: String(r.id), orgId: String(r.org_id), name: String(r.name), createdAt: num(r.created_at) };
}

export function toProject(r: Row): Project {
  return { id: String(r.id), teamId: String(r.team_id), name: String(r.name), createdAt: num(r.created_at) };
}

export function toKey(r: Row): ApiKey {
  return {
    id: String(r.id),
    projectId: String(r.project_id),
    name: String(r.name),
    prefix: String(r.key_prefix),
    hash: String(r.key_hash),
    createdAt: num(r.created_at),
    expiresAt: nullableNum(r.expires_at),
    revokedAt: nullableNum(r.revoked_at),
    lastUsedAt: nullableNum(r.last_used_at),
  };
}

export function toLimitRow(r: Row): LimitRow {
  return {
    scope: r.scope_type as ScopeKind,
    scopeId: String(r.scope_id),
    rpm: nullableNum(r.rpm),
    tpm: nullableNum(r.tpm),
    budget: nullableNum(r.budget),
    period: nullableStr(r.period) as BudgetPeriod | null,
    models: r.models === null || r.models === undefined ? null : (JSON.parse(String(r.models)) as string[]),
    band: nullableStr(r.band),
    profile: nullableStr(r.profile),
  };
}

export const ENTITY: Record<ScopeKind, (r: Row) => Entity> = { org: toOrg, team: toTeam, project: toProject, key: toKey };
