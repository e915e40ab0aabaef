import type {
  ApiKey,
  AuditEvent,
  BilledRecord,
  IssuedKey,
  LimitRow,
  Limits,
  Org,
  Project,
  ScopeKind,
  Team,
  TenancyChange,
  TenancySnapshot,
  UsageQuery,
  UsageRow,
} from '../../messages/tenancy.js';

// What tenancy asks of its database, in the domain's words: a backend (SQLite now,
// Postgres later) implements these and keeps its SQL to itself. Every mutation writes
// its audit event in the same transaction; every reference (`ref`) is an id or a name.

/** How far the usage writer has read the journal: the byte after the last line committed. */
export interface JournalPosition {
  segment: number;
  offset: number;
}

export type Entity = Org | Team | Project | ApiKey;

export interface TenancyStore {
  /** Everything the main thread's directory needs, with each key's spend in the UTC day and month of `now`. */
  snapshot(): TenancySnapshot;

  createOrg(name: string, actor: string): { org: Org; change: TenancyChange };
  createTeam(name: string, org: string, actor: string): { team: Team; change: TenancyChange };
  createProject(name: string, team: string, actor: string): { project: Project; change: TenancyChange };
  createKey(project: string, name: string, expiresAt: number | null, actor: string): { issued: IssuedKey; change: TenancyChange };
  revokeKey(key: string, actor: string): { key: ApiKey; change: TenancyChange };
  rotateKey(key: string, graceMs: number, actor: string): { issued: IssuedKey; old: ApiKey; change: TenancyChange };
  setLimits(scope: ScopeKind, ref: string, limits: Partial<Limits>, clear: boolean, actor: string): { row: LimitRow | null; change: TenancyChange };

  /** The entities of `kind`, only those under `parent` (a ref one level up) when given. */
  list(kind: ScopeKind, parent: string | null): Entity[];
  show(kind: ScopeKind, ref: string): { entity: Entity; limits: LimitRow | null };
  /** Every limit row, or those of one level (`scope` alone) or one entity (`scope` and `ref`). */
  limits(scope: ScopeKind | null, ref: string | null): LimitRow[];
  usage(query: UsageQuery): UsageRow[];
  /** The newest events first, at most `limit`, only those at or after `since` when given. */
  audit(limit: number, since: number | null): AuditEvent[];

  /** Where the usage writer resumes; null before its first commit. */
  journalPosition(): JournalPosition | null;
  /**
   * Stores the records, their hourly rollups and the keys' last use, and moves the
   * journal position to `to`, all in one transaction: a record is stored exactly when
   * the position says it was read.
   */
  ingest(records: readonly BilledRecord[], to: JournalPosition): void;
  /** Deletes at most `max` raw usage rows older than `before` (rollups stay); returns how many went. */
  pruneUsage(before: number, max: number): number;

  close(): void;
}
