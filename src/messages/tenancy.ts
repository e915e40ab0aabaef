import { address, type Ask } from '../runtime/protocol.js';
import type { UsageRecord } from './accounting.js';
import type { Outcome } from './agent.js';

// The tenancy tree and its limits as they cross threads: the store actor (its own
// thread, the only one that touches the database) answers the admin port's mutations
// and queries, and hands the data port's main thread a snapshot at start and a change
// after each mutation. The request path reads only the main thread's copy.

/** The four levels a limit can hang off, outermost first. */
export type ScopeKind = 'org' | 'team' | 'project' | 'key';

export interface Org {
  /** `org_…` */
  id: string;
  /** Unique among organizations. */
  name: string;
  /** Wall-clock ms. */
  createdAt: number;
}

export interface Team {
  /** `team_…` */
  id: string;
  orgId: string;
  /** Unique within its organization. */
  name: string;
  createdAt: number;
}

export interface Project {
  /** `proj_…` */
  id: string;
  teamId: string;
  /** Unique within its team. */
  name: string;
  createdAt: number;
}

/** An API key as stored: never the key itself, only its hash. */
export interface ApiKey {
  /** `key_…` */
  id: string;
  projectId: string;
  name: string;
  /** The first characters of the key, for display (`sk-llmgw-4f2a…`); never used to authenticate. */
  prefix: string;
  /** sha256 of the full key, lowercase hex. */
  hash: string;
  createdAt: number;
  /** Wall-clock ms after which the key no longer works; null: never. Rotation sets it on the old key. */
  expiresAt: number | null;
  /** Soft revocation: the row stays so that usage and audit keep their subject. */
  revokedAt: number | null;
  /** Written lazily by the usage writer; null until first used. */
  lastUsedAt: number | null;
}

export type BudgetPeriod = 'day' | 'month';

/**
 * What one level sets; null is "no limit here". A request is held to every level on its
 * chain (key → project → team → org), so the effective value of each is the most
 * restrictive one set along it.
 */
export interface Limits {
  /** Requests per minute. */
  rpm: number | null;
  /** Tokens (prompt + completion) per minute. */
  tpm: number | null;
  /** Units per `period` (see the model's `units`). */
  budget: number | null;
  period: BudgetPeriod | null;
  /** Canonical model names allowed; null: all. Along the chain: the intersection. */
  models: string[] | null;
  /** Admission band; along the chain: the least urgent one set. */
  band: string | null;
  /** Routing profile; along the chain: the innermost one set. */
  profile: string | null;
}

export interface LimitRow extends Limits {
  scope: ScopeKind;
  scopeId: string;
}

/** Units already spent in the current day and month, per key (UTC periods), restored at start. */
export interface KeySpend {
  keyId: string;
  /** Start of the day the `day` figure is for, wall-clock ms (UTC midnight). */
  dayStart: number;
  day: number;
  /** Start of the month the `month` figure is for (UTC). */
  monthStart: number;
  month: number;
}

export interface TenancySnapshot {
  orgs: Org[];
  teams: Team[];
  projects: Project[];
  keys: ApiKey[];
  limits: LimitRow[];
  spend: KeySpend[];
}

/** What a mutation changed, applied by the main thread to its copy; absent lists changed nothing. */
export interface TenancyChange {
  orgs?: Org[];
  teams?: Team[];
  projects?: Project[];
  keys?: ApiKey[];
  limits?: LimitRow[];
  /** Levels whose limits were cleared altogether. */
  clearedLimits?: { scope: ScopeKind; scopeId: string }[];
}

/**
 * A usage record with who it is billed to and what it cost: one line of the usage
 * journal, one row of the usage table. `keyId` and the chain are null for a request
 * refused before its key was known (a 401).
 */
export interface BilledRecord extends UsageRecord {
  keyId: string | null;
  projectId: string | null;
  teamId: string | null;
  orgId: string | null;
  /** Billable cost in the model's units. */
  units: number;
}

export type UsageGrouping = 'key' | 'project' | 'team' | 'org' | 'model';

export interface UsageQuery {
  by: UsageGrouping;
  /** Wall-clock ms, inclusive; null: from the beginning. */
  since: number | null;
  /** Wall-clock ms, exclusive; null: until now. */
  until: number | null;
  /** Only this entity's usage (any level, by name or id); null: everything. */
  of: { scope: ScopeKind; ref: string } | null;
}

export interface UsageRow {
  /** The group's id (a model's canonical name when grouped by model). */
  id: string;
  /** The group's name where it has one. */
  name: string | null;
  requests: number;
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
  units: number;
  errors: number;
}

export interface AuditEvent {
  id: number;
  at: number;
  /** Who asked: the admin client's stated actor, else its address. */
  actor: string;
  /** `org.create`, `key.revoke`, `limits.set` … */
  action: string;
  targetKind: ScopeKind;
  targetId: string;
  /** What changed, never a secret. */
  detail: Record<string, unknown>;
}

/** A created or rotated key: the only time its text exists outside the client. */
export interface IssuedKey {
  key: string;
  record: ApiKey;
}

/** Every mutation names who asked, for the audit trail. */
interface ByActor {
  actor: string;
}

/**
 * Protocol of the store actor. References are names or ids (`ref`). An ask the caller
 * can get wrong (a taken name, an unknown or ambiguous ref, invalid limits) answers an
 * Outcome: a refusal is an answer, while a handler that threw would crash and restart
 * the store, and a few in a row would escalate.
 */
export type TenancyMsg =
  | ({ type: 'snapshot' } & Ask<TenancySnapshot>)
  | ({ type: 'create-org'; name: string } & ByActor & Ask<Outcome<{ org: Org; change: TenancyChange }>>)
  | ({ type: 'create-team'; name: string; org: string } & ByActor & Ask<Outcome<{ team: Team; change: TenancyChange }>>)
  | ({ type: 'create-project'; name: string; team: string } & ByActor & Ask<Outcome<{ project: Project; change: TenancyChange }>>)
  | ({ type: 'create-key'; project: string; name: string; expiresAt: number | null } & ByActor & Ask<Outcome<{ issued: IssuedKey; change: TenancyChange }>>)
  | ({ type: 'revoke-key'; key: string } & ByActor & Ask<Outcome<{ key: ApiKey; change: TenancyChange }>>)
  /** A new key for the same project, name and limits; the old one works until `graceMs` from now. */
  | ({ type: 'rotate-key'; key: string; graceMs: number } & ByActor & Ask<Outcome<{ issued: IssuedKey; old: ApiKey; change: TenancyChange }>>)
  /** Sets the given fields at one level (absent fields keep their value; null clears one); `clear` drops the level's limits. */
  | ({ type: 'set-limits'; scope: ScopeKind; ref: string; limits: Partial<Limits>; clear: boolean } & ByActor & Ask<Outcome<{ row: LimitRow | null; change: TenancyChange }>>)
  | ({ type: 'list'; kind: ScopeKind; parent: string | null } & Ask<Outcome<(Org | Team | Project | ApiKey)[]>>)
  | ({ type: 'show'; kind: ScopeKind; ref: string } & Ask<Outcome<{ entity: Org | Team | Project | ApiKey; limits: LimitRow | null }>>)
  | ({ type: 'limits'; scope: ScopeKind | null; ref: string | null } & Ask<Outcome<LimitRow[]>>)
  /** Drains the journal first, so that every request that ended before the ask is counted. */
  | ({ type: 'usage'; query: UsageQuery } & Ask<Outcome<UsageRow[]>>)
  | ({ type: 'audit'; limit: number; since: number | null } & Ask<AuditEvent[]>)
  /** Drains the journal into the store now (shutdown, and before a usage query). */
  | ({ type: 'flush' } & Ask<{ records: number }>);

export const TENANCY_STORE = address<TenancyMsg>('tenancy-store');
