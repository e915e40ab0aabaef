// The store's schema as an ordered list of steps: a database records the number of
// steps applied in `schema_version`, and opening it applies the missing ones, each in
// its own transaction. Steps are only ever appended; an applied one is never edited.
// The SQL is kept portable (no SQLite-only types or clauses) so a Postgres backend can
// run the same list.

export interface Migration {
  /** 1, 2, 3 … in order. */
  version: number;
  what: string;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    what: 'the tenancy tree, keys, limits, usage with its hourly rollups, audit and the journal position',
    sql: `
CREATE TABLE organizations (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  created_at BIGINT NOT NULL
);
CREATE TABLE teams (
  id TEXT PRIMARY KEY,
  org_id TEXT NOT NULL REFERENCES organizations(id),
  name TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  UNIQUE (org_id, name)
);
CREATE TABLE projects (
  id TEXT PRIMARY KEY,
  team_id TEXT NOT NULL REFERENCES teams(id),
  name TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  UNIQUE (team_id, name)
);
CREATE TABLE api_keys (
  id TEXT PRIMARY KEY,
  key_hash TEXT NOT NULL UNIQUE,
  key_prefix TEXT NOT NULL,
  name TEXT NOT NULL,
  project_id TEXT NOT NULL REFERENCES projects(id),
  created_at BIGINT NOT NULL,
  expires_at BIGINT,
  revoked_at BIGINT,
  last_used_at BIGINT
);
CREATE INDEX api_keys_project ON api_keys (project_id);
CREATE TABLE limits (
  scope_type TEXT NOT NULL,
  scope_id TEXT NOT NULL,
  rpm BIGINT,
  tpm BIGINT,
  budget DOUBLE PRECISION,
  period TEXT,
  models TEXT,
  band TEXT,
  profile TEXT,
  PRIMARY KEY (scope_type, scope_id)
);
CREATE TABLE usage (
  id INTEGER PRIMARY KEY,
  request_id TEXT NOT NULL,
  ts BIGINT NOT NULL,
  key_id TEXT,
  project_id TEXT,
  team_id TEXT,
  org_id TEXT,
  path TEXT NOT NULL,
  model_asked TEXT NOT NULL,
  model_served TEXT,
  endpoint TEXT,
  status INTEGER NOT NULL,
  error TEXT,
  stream INTEGER NOT NULL,
  prompt_tokens BIGINT NOT NULL,
  completion_tokens BIGINT NOT NULL,
  cached_tokens BIGINT NOT NULL,
  estimated INTEGER NOT NULL,
  units DOUBLE PRECISION NOT NULL,
  ttft_ms DOUBLE PRECISION,
  duration_ms DOUBLE PRECISION NOT NULL,
  queue_ms DOUBLE PRECISION NOT NULL,
  band TEXT
);
CREATE INDEX usage_ts ON usage (ts);
CREATE TABLE usage_rollup (
  hour BIGINT NOT NULL,
  key_id TEXT NOT NULL,
  model TEXT NOT NULL,
  requests BIGINT NOT NULL,
  prompt_tokens BIGINT NOT NULL,
  completion_tokens BIGINT NOT NULL,
  cached_tokens BIGINT NOT NULL,
  units DOUBLE PRECISION NOT NULL,
  errors BIGINT NOT NULL,
  PRIMARY KEY (hour, key_id, model)
);
CREATE TABLE audit (
  id INTEGER PRIMARY KEY,
  at BIGINT NOT NULL,
  actor TEXT NOT NULL,
  action TEXT NOT NULL,
  target_kind TEXT NOT NULL,
  target_id TEXT NOT NULL,
  detail TEXT NOT NULL
);
CREATE INDEX audit_at ON audit (at);
CREATE TABLE journal_position (
  id INTEGER PRIMARY KEY,
  segment BIGINT NOT NULL,
  byte_offset BIGINT NOT NULL
);
`,
  },
];

/** The schema version this code writes: the last step's. */
export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]!.version;
