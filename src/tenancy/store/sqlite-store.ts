import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import sqlite from 'node-sqlite3-wasm';
import { LlmgwError } from '../../errors.js';
import type {
  ApiKey,
  AuditEvent,
  BilledRecord,
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
import { generateKey, newId } from '../keys.js';
import { applyLimits, limitsPatch } from '../limit-patch.js';
import { dayStart, hourStart, monthStart } from '../periods.js';
import { MIGRATIONS, SCHEMA_VERSION } from './migrations.js';
import { ENTITY, num, toKey, toLimitRow, toOrg, toProject, toTeam } from './sqlite-rows.js';
import { removeOwner, takeOverStaleLock, writeOwner } from './store-owner.js';
import type { Entity, JournalPosition, TenancyStore } from './tenancy-store.js';

const { Database } = sqlite;
type Db = InstanceType<typeof Database>;

export interface SqliteStoreOptions {
  /** Wall clock, ms; a spec moves it to test expiry and periods. */
  now?: () => number;
  /**
   * A lock held by this very process is a stale one: the caller is the only opener in
   * the process (the store actor, whose thread may have died holding it and been
   * started again).
   */
  reclaimOwnLock?: boolean;
}

const TABLE: Record<ScopeKind, string> = { org: 'organizations', team: 'teams', project: 'projects', key: 'api_keys' };
const PARENT: Record<ScopeKind, { kind: ScopeKind; column: string } | null> = {
  org: null,
  team: { kind: 'org', column: 'org_id' },
  project: { kind: 'team', column: 'team_id' },
  key: { kind: 'project', column: 'project_id' },
};
const NOUN: Record<ScopeKind, string> = { org: 'organization', team: 'team', project: 'project', key: 'key' };
/** Key of the rollup rows of requests refused before their key was known. */
const NO_KEY = '';

/**
 * The tenancy store in one SQLite file, through node-sqlite3-wasm. The file is opened
 * in exclusive locking mode, which lets WAL work without the shared-memory index the
 * WebAssembly file layer lacks: 500-row transactions of a 14-column insert ran at ~83k
 * rows/s against ~28k with the default rollback journal, at full sync, so a commit the
 * writer made is one the disk has (the writer's own figures: bench/usage-writer.ts). (`synchronous=NORMAL` doubles that again but may lose the last commits
 * on power loss after their journal segment was deleted.) Exclusive locking also makes a
 * second server on the same file fail at open instead of interleaving writes (see
 * store-owner.ts for a lock a killed server left).
 */
export class SqliteStore implements TenancyStore {
  private readonly db: Db;
  private readonly path: string;
  private readonly now: () => number;
  private readonly insertUsage: ReturnType<Db['prepare']>;
  private readonly upsertRollup: ReturnType<Db['prepare']>;
  private readonly touchKey: ReturnType<Db['prepare']>;
  private readonly setPosition: ReturnType<Db['prepare']>;

  private constructor(db: Db, path: string, now: () => number) {
    this.db = db;
    this.path = path;
    this.now = now;
    this.insertUsage = db.prepare(
      `INSERT INTO usage (request_id, ts, key_id, project_id, team_id, org_id, path, model_asked, model_served, endpoint, status, error, stream,
        prompt_tokens, completion_tokens, cached_tokens, estimated, units, ttft_ms, duration_ms, queue_ms, band)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.upsertRollup = db.prepare(
      `INSERT INTO usage_rollup (hour, key_id, model, requests, prompt_tokens, completion_tokens, cached_tokens, units, errors)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (hour, key_id, model) DO UPDATE SET
         requests = usage_rollup.requests + excluded.requests,
         prompt_tokens = usage_rollup.prompt_tokens + excluded.prompt_tokens,
         completion_tokens = usage_rollup.completion_tokens + excluded.completion_tokens,
         cached_tokens = usage_rollup.cached_tokens + excluded.cached_tokens,
         units = usage_rollup.units + excluded.units,
         errors = usage_rollup.errors + excluded.errors`,
    );
    this.touchKey = db.prepare('UPDATE api_keys SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)');
    this.setPosition = db.prepare(
      'INSERT INTO journal_position (id, segment, byte_offset) VALUES (1, ?, ?) ON CONFLICT (id) DO UPDATE SET segment = excluded.segment, byte_offset = excluded.byte_offset',
    );
  }

  /** Opens (creating the file and its folder when absent) and migrates; LLMGW_STORE_FAILED with the path and why when it cannot. */
  static open(path: string, opts: SqliteStoreOptions = {}): SqliteStore {
    let db: Db;
    try {
      mkdirSync(dirname(path), { recursive: true });
      takeOverStaleLock(path, opts.reclaimOwnLock ?? false);
      db = new Database(path);
    } catch (err) {
      if (err instanceof LlmgwError) throw err;
      throw new LlmgwError('LLMGW_STORE_FAILED', `cannot open the tenancy store ${path}: ${reason(err)}`, { path });
    }
    let owned = false;
    try {
      db.exec('PRAGMA locking_mode=EXCLUSIVE');
      // The first access takes the lock, and in exclusive mode keeps it until close.
      db.exec('PRAGMA journal_mode=WAL');
      writeOwner(path);
      owned = true;
      db.exec('PRAGMA foreign_keys=ON');
      migrate(db, path);
      return new SqliteStore(db, path, opts.now ?? Date.now);
    } catch (err) {
      db.close();
      if (owned) removeOwner(path);
      if (err instanceof LlmgwError) throw err;
      throw new LlmgwError('LLMGW_STORE_FAILED', `cannot open the tenancy store ${path}: ${reason(err)}`, { path });
    }
  }

  close(): void {
    for (const s of [this.insertUsage, this.upsertRollup, this.touchKey, this.setPosition]) s.finalize();
    this.db.close();
    removeOwner(this.path);
  }

  // --- the tree

  snapshot(): TenancySnapshot {
    return {
      orgs: this.db.all('SELECT * FROM organizations ORDER BY created_at, id').map(toOrg),
      teams: this.db.all('SELECT * FROM teams ORDER BY created_at, id').map(toTeam),
      projects: this.db.all('SELECT * FROM projects ORDER BY created_at, id').map(toProject),
      keys: this.db.all('SELECT * FROM api_keys ORDER BY created_at, id').map(toKey),
      limits: this.db.all('SELECT * FROM limits ORDER BY scope_type, scope_id').map(toLimitRow),
      spend: this.spend(),
    };
  }

  createOrg(name: string, actor: string): { org: Org; change: TenancyChange } {
    return this.tx(() => {
      this.claimName('org', name, null);
      const org: Org = { id: newId('org'), name, createdAt: this.now() };
      this.db.run('INSERT INTO organizations (id, name, created_at) VALUES (?, ?, ?)', [org.id, name, org.createdAt]);
      this.record(actor, 'org.create', 'org', org.id, { name });
      return { org, change: { orgs: [org] } };
    });
  }

  createTeam(name: string, org: string, actor: string): { team: Team; change: TenancyChange } {
    return this.tx(() => {
      const orgId = this.resolve('org', org);
      this.claimName('team', name, orgId);
      const team: Team = { id: newId('team'), orgId, name, createdAt: this.now() };
      this.db.run('INSERT INTO teams (id, org_id, name, created_at) VALUES (?, ?, ?, ?)', [team.id, orgId, name, team.createdAt]);
      this.record(actor, 'team.create', 'team', team.id, { name, orgId });
      return { team, change: { teams: [team] } };
    });
  }

  createProject(name: string, team: string, actor: string): { project: Project; change: TenancyChange } {
    return this.tx(() => {
      const teamId = this.resolve('team', team);
      this.claimName('project', name, teamId);
      const project: Project = { id: newId('project'), teamId, name, createdAt: this.now() };
      this.db.run('INSERT INTO projects (id, team_id, name, created_at) VALUES (?, ?, ?, ?)', [project.id, teamId, name, project.createdAt]);
      this.record(actor, 'project.create', 'project', project.id, { name, teamId });
      return { project, change: { projects: [project] } };
    });
  }

  createKey(project: string, name: string, expiresAt: number | null, actor: string) {
    if (expiresAt !== null && !(Number.isFinite(expiresAt) && expiresAt > this.now())) {
      throw new LlmgwError('LLMGW_INVALID_REQUEST', `a key's expiry must be in the future, got ${Number.isFinite(expiresAt) ? new Date(expiresAt).toISOString() : String(expiresAt)}`, { expiresAt });
    }
    return this.tx(() => {
      const projectId = this.resolve('project', project);
      const issued = this.issueKey(projectId, name, expiresAt);
      this.record(actor, 'key.create', 'key', issued.record.id, { name, projectId, prefix: issued.record.prefix, expiresAt });
      return { issued, change: { keys: [issued.record] } };
    });
  }

  revokeKey(key: string, actor: string): { key: ApiKey; change: TenancyChange } {
    return this.tx(() => {
      const id = this.resolve('key', key);
      // Revoking twice keeps the first time: it is when the key stopped working.
      this.db.run('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL', [this.now(), id]);
      const revoked = this.key(id);
      this.record(actor, 'key.revoke', 'key', id, { revokedAt: revoked.revokedAt });
      return { key: revoked, change: { keys: [revoked] } };
    });
  }

  rotateKey(key: string, graceMs: number, actor: string) {
    if (!(Number.isFinite(graceMs) && graceMs >= 0)) throw new LlmgwError('LLMGW_INVALID_REQUEST', `a rotation's grace must be ≥ 0 ms, got ${graceMs}`, { graceMs });
    return this.tx(() => {
      const old = this.key(this.resolve('key', key));
      const now = this.now();
      if (old.revokedAt !== null) throw new LlmgwError('LLMGW_ENTITY_CONFLICT', `key ${old.id} is revoked: create a new key instead of rotating it`, { id: old.id });
      if (old.expiresAt !== null && old.expiresAt <= now) throw new LlmgwError('LLMGW_ENTITY_CONFLICT', `key ${old.id} has expired: create a new key instead of rotating it`, { id: old.id });
      // The new key lives as long as the old one was meant to; the old one never gains time.
      const expiresAt = old.expiresAt === null ? null : now + (old.expiresAt - old.createdAt);
      const issued = this.issueKey(old.projectId, old.name, expiresAt);
      const oldExpires = Math.min(old.expiresAt ?? Infinity, now + graceMs);
      this.db.run('UPDATE api_keys SET expires_at = ? WHERE id = ?', [oldExpires, old.id]);
      const change: TenancyChange = { keys: [issued.record, this.key(old.id)] };
      const limits = this.limitRow('key', old.id);
      if (limits) {
        this.writeLimits({ ...limits, scopeId: issued.record.id });
        change.limits = [{ ...limits, scopeId: issued.record.id }];
      }
      this.record(actor, 'key.rotate', 'key', old.id, { newId: issued.record.id, prefix: issued.record.prefix, oldExpiresAt: oldExpires });
      return { issued, old: this.key(old.id), change };
    });
  }

  setLimits(scope: ScopeKind, ref: string, limits: Partial<Limits>, clear: boolean, actor: string): { row: LimitRow | null; change: TenancyChange } {
    return this.tx(() => {
      const scopeId = this.resolve(scope, ref);
      if (clear) {
        this.db.run('DELETE FROM limits WHERE scope_type = ? AND scope_id = ?', [scope, scopeId]);
        this.record(actor, 'limits.clear', scope, scopeId, {});
        return { row: null, change: { clearedLimits: [{ scope, scopeId }] } };
      }
      const row = applyLimits(scope, scopeId, this.limitRow(scope, scopeId), limits);
      this.writeLimits(row);
      this.record(actor, 'limits.set', scope, scopeId, limitsPatch(limits));
      return { row, change: { limits: [row] } };
    });
  }

  list(kind: ScopeKind, parent: string | null): Entity[] {
    const up = PARENT[kind];
    if (parent !== null && up === null) throw new LlmgwError('LLMGW_INVALID_REQUEST', 'organizations have no parent to list them under');
    const rows = parent !== null && up !== null
      ? this.db.all(`SELECT * FROM ${TABLE[kind]} WHERE ${up.column} = ? ORDER BY created_at, id`, [this.resolve(up.kind, parent)])
      : this.db.all(`SELECT * FROM ${TABLE[kind]} ORDER BY created_at, id`);
    return rows.map(ENTITY[kind]);
  }

  show(kind: ScopeKind, ref: string): { entity: Entity; limits: LimitRow | null } {
    const id = this.resolve(kind, ref);
    return { entity: ENTITY[kind](this.db.get(`SELECT * FROM ${TABLE[kind]} WHERE id = ?`, [id])!), limits: this.limitRow(kind, id) };
  }

  limits(scope: ScopeKind | null, ref: string | null): LimitRow[] {
    if (ref !== null && scope === null) throw new LlmgwError('LLMGW_INVALID_REQUEST', 'a limits reference needs its level (org, team, project or key)');
    if (scope !== null && ref !== null) {
      const row = this.limitRow(scope, this.resolve(scope, ref));
      return row ? [row] : [];
    }
    const rows = scope === null ? this.db.all('SELECT * FROM limits ORDER BY scope_type, scope_id') : this.db.all('SELECT * FROM limits WHERE scope_type = ? ORDER BY scope_id', [scope]);
    return rows.map(toLimitRow);
  }

  audit(limit: number, since: number | null): AuditEvent[] {
    const rows = since === null
      ? this.db.all('SELECT * FROM audit ORDER BY id DESC LIMIT ?', [limit])
      : this.db.all('SELECT * FROM audit WHERE at >= ? ORDER BY id DESC LIMIT ?', [since, limit]);
    return rows.map((r) => ({
      id: num(r.id),
      at: num(r.at),
      actor: String(r.actor),
      action: String(r.action),
      targetKind: r.target_kind as ScopeKind,
      targetId: String(r.target_id),
      detail: JSON.parse(String(r.detail)) as Record<string, unknown>,
    }));
  }

  // --- usage

  usage(query: UsageQuery): UsageRow[] {
    const filter = query.of === null ? null : { scope: query.of.scope, id: this.resolve(query.of.scope, query.of.ref) };
    // Rollups answer any period that starts and ends on an hour; raw rows (kept for the
    // retention period) answer the rest.
    const onHours = (query.since === null || query.since === hourStart(query.since)) && (query.until === null || query.until === hourStart(query.until));
    return onHours ? this.usageFromRollups(query, filter) : this.usageFromRows(query, filter);
  }

  private usageFromRollups(query: UsageQuery, filter: { scope: ScopeKind; id: string } | null): UsageRow[] {
    const where: string[] = [];
    const values: (string | number)[] = [];
    if (query.since !== null) (where.push('r.hour >= ?'), values.push(query.since));
    if (query.until !== null) (where.push('r.hour < ?'), values.push(query.until));
    const chain = 'LEFT JOIN api_keys k ON k.id = r.key_id LEFT JOIN projects p ON p.id = k.project_id LEFT JOIN teams t ON t.id = p.team_id';
    const column: Record<ScopeKind, string> = { key: 'r.key_id', project: 'k.project_id', team: 'p.team_id', org: 't.org_id' };
    if (filter) (where.push(`${column[filter.scope]} = ?`), values.push(filter.id));
    const group = query.by === 'model' ? 'r.model' : column[query.by];
    if (query.by !== 'model') where.push(`${group} IS NOT NULL`, `r.key_id <> ''`);
    return this.grouped(query.by, group, `usage_rollup r ${chain}`, where, values, {
      requests: 'SUM(r.requests)',
      prompt: 'SUM(r.prompt_tokens)',
      completion: 'SUM(r.completion_tokens)',
      cached: 'SUM(r.cached_tokens)',
      units: 'SUM(r.units)',
      errors: 'SUM(r.errors)',
    });
  }

  private usageFromRows(query: UsageQuery, filter: { scope: ScopeKind; id: string } | null): UsageRow[] {
    const where: string[] = [];
    const values: (string | number)[] = [];
    if (query.since !== null) (where.push('u.ts >= ?'), values.push(query.since));
    if (query.until !== null) (where.push('u.ts < ?'), values.push(query.until));
    const column: Record<ScopeKind, string> = { key: 'u.key_id', project: 'u.project_id', team: 'u.team_id', org: 'u.org_id' };
    if (filter) (where.push(`${column[filter.scope]} = ?`), values.push(filter.id));
    const group = query.by === 'model' ? 'COALESCE(u.model_served, u.model_asked)' : column[query.by];
    if (query.by !== 'model') where.push(`${group} IS NOT NULL`);
    return this.grouped(query.by, group, 'usage u', where, values, {
      requests: 'COUNT(*)',
      prompt: 'SUM(u.prompt_tokens)',
      completion: 'SUM(u.completion_tokens)',
      cached: 'SUM(u.cached_tokens)',
      units: 'SUM(u.units)',
      errors: 'SUM(CASE WHEN u.status >= 400 THEN 1 ELSE 0 END)',
    });
  }

  private grouped(
    by: UsageQuery['by'],
    group: string,
    from: string,
    where: string[],
    values: (string | number)[],
    sums: Record<'requests' | 'prompt' | 'completion' | 'cached' | 'units' | 'errors', string>,
  ): UsageRow[] {
    const sql = `SELECT ${group} AS gid, ${sums.requests} AS requests, ${sums.prompt} AS prompt, ${sums.completion} AS completion,
      ${sums.cached} AS cached, ${sums.units} AS units, ${sums.errors} AS errors
      FROM ${from} ${where.length ? `WHERE ${where.join(' AND ')}` : ''} GROUP BY ${group} ORDER BY ${group}`;
    const names = by === 'model' ? null : new Map(this.db.all(`SELECT id, name FROM ${TABLE[by]}`).map((r) => [String(r.id), String(r.name)]));
    return this.db.all(sql, values).map((r) => ({
      id: String(r.gid),
      name: names?.get(String(r.gid)) ?? null,
      requests: num(r.requests),
      promptTokens: num(r.prompt),
      completionTokens: num(r.completion),
      cachedTokens: num(r.cached),
      units: num(r.units),
      errors: num(r.errors),
    }));
  }

  journalPosition(): JournalPosition | null {
    const r = this.db.get('SELECT segment, byte_offset FROM journal_position WHERE id = 1');
    return r ? { segment: num(r.segment), offset: num(r.byte_offset) } : null;
  }

  ingest(records: readonly BilledRecord[], to: JournalPosition): void {
    this.tx(() => {
      // Rollups are aggregated here first: one upsert per (hour, key, model), not one per record.
      const rollups = new Map<string, { hour: number; key: string; model: string; requests: number; prompt: number; completion: number; cached: number; units: number; errors: number }>();
      for (const r of records) {
        this.insertUsage.run([
          r.id, r.at, r.keyId, r.projectId, r.teamId, r.orgId, r.path, r.modelAsked, r.modelServed, r.endpoint, r.status, r.error, r.stream ? 1 : 0,
          r.promptTokens, r.completionTokens, r.cachedTokens, r.usageEstimated ? 1 : 0, r.units, r.ttftMs, r.durationMs, r.queueMs, r.band,
        ]);
        const hour = hourStart(r.at);
        const key = r.keyId ?? NO_KEY;
        const model = r.modelServed ?? r.modelAsked;
        const id = `${hour}\n${key}\n${model}`;
        let g = rollups.get(id);
        if (!g) rollups.set(id, (g = { hour, key, model, requests: 0, prompt: 0, completion: 0, cached: 0, units: 0, errors: 0 }));
        g.requests++;
        g.prompt += r.promptTokens;
        g.completion += r.completionTokens;
        g.cached += r.cachedTokens;
        g.units += r.units;
        if (r.status >= 400) g.errors++;
      }
      for (const g of rollups.values()) this.upsertRollup.run([g.hour, g.key, g.model, g.requests, g.prompt, g.completion, g.cached, g.units, g.errors]);
      this.setPosition.run([to.segment, to.offset]);
    });
  }

  recordLastUse(lastUse: ReadonlyMap<string, number>): void {
    this.tx(() => {
      for (const [key, at] of lastUse) this.touchKey.run([at, key, at]);
    });
  }

  pruneUsage(before: number, max: number): number {
    return this.db.run('DELETE FROM usage WHERE id IN (SELECT id FROM usage WHERE ts < ? ORDER BY id LIMIT ?)', [before, max]).changes;
  }

  // --- helpers

  /** Units per key since the start of the current UTC day and month; rollups are exact since they commit with their rows. */
  private spend(): TenancySnapshot['spend'] {
    const now = this.now();
    const day = dayStart(now);
    const month = monthStart(now);
    const rows = this.db.all(
      `SELECT key_id, SUM(CASE WHEN hour >= ? THEN units ELSE 0 END) AS day, SUM(units) AS month
       FROM usage_rollup WHERE hour >= ? AND key_id <> '' GROUP BY key_id ORDER BY key_id`,
      [day, month],
    );
    return rows.map((r) => ({ keyId: String(r.key_id), dayStart: day, day: num(r.day), monthStart: month, month: num(r.month) }));
  }

  private tx<T>(body: () => T): T {
    this.db.exec('BEGIN');
    try {
      const out = body();
      this.db.exec('COMMIT');
      return out;
    } catch (err) {
      this.db.exec('ROLLBACK');
      if (err instanceof LlmgwError) throw err;
      throw new LlmgwError('LLMGW_STORE_FAILED', `tenancy store: ${reason(err)}`);
    }
  }

  /** The id `ref` names: an id, else a unique name. */
  private resolve(kind: ScopeKind, ref: string): string {
    const table = TABLE[kind];
    if (this.db.get(`SELECT id FROM ${table} WHERE id = ?`, [ref])) return ref;
    const ids = this.db.all(`SELECT id FROM ${table} WHERE name = ? ORDER BY id`, [ref]).map((r) => String(r.id));
    if (ids.length === 1) return ids[0]!;
    if (ids.length === 0) throw new LlmgwError('LLMGW_ENTITY_NOT_FOUND', `no ${NOUN[kind]} has the id or name '${ref}'`, { kind, ref });
    throw new LlmgwError('LLMGW_ENTITY_CONFLICT', `the name '${ref}' matches ${ids.length} ${NOUN[kind]}s (${ids.join(', ')}): name one by its id`, { kind, ref, ids });
  }

  private claimName(kind: Exclude<ScopeKind, 'key'>, name: string, parentId: string | null): void {
    if (name.trim() === '') throw new LlmgwError('LLMGW_INVALID_REQUEST', `a ${NOUN[kind]} needs a name`);
    const up = PARENT[kind];
    const taken = up === null
      ? this.db.get(`SELECT id FROM ${TABLE[kind]} WHERE name = ?`, [name])
      : this.db.get(`SELECT id FROM ${TABLE[kind]} WHERE name = ? AND ${up.column} = ?`, [name, parentId]);
    if (taken) {
      const where = up === null ? '' : ` in ${NOUN[up.kind]} ${parentId}`;
      throw new LlmgwError('LLMGW_ENTITY_CONFLICT', `a ${NOUN[kind]} named '${name}' already exists${where} (${String(taken.id)})`, { kind, name, id: String(taken.id) });
    }
  }

  private issueKey(projectId: string, name: string, expiresAt: number | null): { key: string; record: ApiKey } {
    const { key, hash, prefix } = generateKey();
    const record: ApiKey = { id: newId('key'), projectId, name, prefix, hash, createdAt: this.now(), expiresAt, revokedAt: null, lastUsedAt: null };
    this.db.run('INSERT INTO api_keys (id, key_hash, key_prefix, name, project_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)', [
      record.id, hash, prefix, name, projectId, record.createdAt, expiresAt,
    ]);
    return { key, record };
  }

  private key(id: string): ApiKey {
    return toKey(this.db.get('SELECT * FROM api_keys WHERE id = ?', [id])!);
  }

  private limitRow(scope: ScopeKind, scopeId: string): LimitRow | null {
    const r = this.db.get('SELECT * FROM limits WHERE scope_type = ? AND scope_id = ?', [scope, scopeId]);
    return r ? toLimitRow(r) : null;
  }

  private writeLimits(row: LimitRow): void {
    this.db.run(
      `INSERT INTO limits (scope_type, scope_id, rpm, tpm, budget, period, models, band, profile) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (scope_type, scope_id) DO UPDATE SET rpm = excluded.rpm, tpm = excluded.tpm, budget = excluded.budget, period = excluded.period,
         models = excluded.models, band = excluded.band, profile = excluded.profile`,
      [row.scope, row.scopeId, row.rpm, row.tpm, row.budget, row.period, row.models === null ? null : JSON.stringify(row.models), row.band, row.profile],
    );
  }

  /** One audit event, in the mutation's transaction: `detail` must never hold a key's text. */
  private record(actor: string, action: string, targetKind: ScopeKind, targetId: string, detail: Record<string, unknown>): void {
    this.db.run('INSERT INTO audit (at, actor, action, target_kind, target_id, detail) VALUES (?, ?, ?, ?, ?, ?)', [
      this.now(), actor, action, targetKind, targetId, JSON.stringify(detail),
    ]);
  }
}

function migrate(db: Db, path: string): void {
  db.exec('CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)');
  const at = num(db.get('SELECT MAX(version) AS v FROM schema_version')?.v ?? 0);
  if (at > SCHEMA_VERSION) {
    throw new LlmgwError(
      'LLMGW_STORE_FAILED',
      `the tenancy store ${path} is at schema version ${at}, newer than this llmgw knows (${SCHEMA_VERSION}): run a newer llmgw, or restore a backup made by this one`,
      { path, version: at, known: SCHEMA_VERSION },
    );
  }
  for (const m of MIGRATIONS) {
    if (m.version <= at) continue;
    db.exec('BEGIN');
    try {
      db.exec(m.sql);
      db.run('INSERT INTO schema_version (version) VALUES (?)', [m.version]);
      db.exec('COMMIT');
    } catch (err) {
      db.exec('ROLLBACK');
      throw new LlmgwError('LLMGW_STORE_FAILED', `cannot migrate the tenancy store ${path} to schema version ${m.version} (${m.what}): ${reason(err)}`, { path, version: m.version });
    }
  }
}

function reason(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

