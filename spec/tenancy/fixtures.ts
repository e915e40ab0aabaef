import { createHash } from 'node:crypto';
import type { ApiKey, BilledRecord, LimitRow, Limits, TenancySnapshot } from '../../src/messages/tenancy.js';

export const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

export const NO_LIMITS: Limits = { rpm: null, tpm: null, budget: null, period: null, models: null, band: null, profile: null };

export function keyRecord(id: string, projectId: string, text: string, over: Partial<ApiKey> = {}): ApiKey {
  return { id, projectId, name: id, prefix: text.slice(0, 15), hash: sha256(text), createdAt: 0, expiresAt: null, revokedAt: null, lastUsedAt: null, ...over };
}

export function limitRow(scope: LimitRow['scope'], scopeId: string, over: Partial<Limits>): LimitRow {
  return { scope, scopeId, ...NO_LIMITS, ...over };
}

/** One org, team and project holding the given keys (`sk-llmgw-<id>` each), with the given limit rows. */
export function oneProject(keyIds: string[], limits: LimitRow[] = []): TenancySnapshot {
  return {
    orgs: [{ id: 'org_a', name: 'a', createdAt: 0 }],
    teams: [{ id: 'team_a', orgId: 'org_a', name: 'a', createdAt: 0 }],
    projects: [{ id: 'proj_a', teamId: 'team_a', name: 'a', createdAt: 0 }],
    keys: keyIds.map((id) => keyRecord(id, 'proj_a', `sk-llmgw-${id}`)),
    limits,
    spend: [],
  };
}

/** A billed record with the given fields over plain defaults. */
export function billed(over: Partial<BilledRecord> = {}): BilledRecord {
  return {
    id: 'r',
    at: 0,
    path: '/v1/chat/completions',
    modelAsked: 'm',
    modelServed: 'm',
    fallback: false,
    endpoint: null,
    status: 200,
    error: null,
    stream: false,
    promptTokens: 1,
    completionTokens: 1,
    cachedTokens: 0,
    usageEstimated: false,
    ttftMs: null,
    durationMs: 1,
    queueMs: 0,
    band: null,
    attempts: 1,
    scheduleMicros: 0,
    profile: 'chat',
    keyId: 'key_a',
    projectId: 'proj_a',
    teamId: 'team_a',
    orgId: 'org_a',
    units: 2,
    ...over,
  };
}
