import { appendFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sqlite from 'node-sqlite3-wasm';
import type { Logger } from '../../src/log.js';
import { storeActor } from '../../src/actors/tenancy/store-actor.js';
import type { AdminPortOptions } from '../../src/admin/admin-port.js';
import { ACCOUNTING } from '../../src/messages/accounting.js';
import { TENANCY_STORE, type BilledRecord, type TenancyMsg } from '../../src/messages/tenancy.js';
import { EndpointTable } from '../../src/router/endpoint-table.js';
import { ActorSystem, type ActorRef } from '../../src/runtime/index.js';
import { journalDirOf, segmentPath } from '../../src/tenancy/journal-segments.js';

/** A fresh folder for a store and its journal, removed by the returned function. */
export function tempDir(): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'llmgw-tenancy-'));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A settable clock for a store. */
export function clock(start = Date.UTC(2026, 2, 14, 10, 30)): { now: () => number; set: (ms: number) => void; advance: (ms: number) => void } {
  let t = start;
  return { now: () => t, set: (ms) => (t = ms), advance: (ms) => (t += ms) };
}

export function billed(id: string, over: Partial<BilledRecord> = {}): BilledRecord {
  return {
    id,
    at: Date.UTC(2026, 2, 14, 10, 30),
    path: '/v1/chat/completions',
    modelAsked: 'llama',
    modelServed: 'llama',
    fallback: false,
    endpoint: '127.0.0.1:9000',
    status: 200,
    error: null,
    stream: false,
    promptTokens: 10,
    completionTokens: 20,
    cachedTokens: 2,
    usageEstimated: false,
    ttftMs: 5,
    durationMs: 40,
    queueMs: 0,
    band: null,
    attempts: 1,
    scheduleMicros: 3,
    profile: 'chat',
    keyId: 'key_a',
    projectId: 'proj_a',
    teamId: 'team_a',
    orgId: 'org_a',
    units: 1.5,
    ...over,
  };
}

/** A logger that keeps what it was told, for specs that assert on a warning. */
export function recordingLogger(): Logger & { lines: { level: string; msg: string; fields: Record<string, unknown> }[] } {
  const lines: { level: string; msg: string; fields: Record<string, unknown> }[] = [];
  const at = (level: string) => (msg: string, fields: Record<string, unknown> = {}) => void lines.push({ level, msg, fields });
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), enabled: () => true };
}

/** Appends records to a journal segment as the data port does: whole lines. */
export function journal(dir: string, seq: number, records: readonly BilledRecord[], tail = ''): void {
  mkdirSync(dir, { recursive: true });
  appendFileSync(segmentPath(dir, seq), records.map((r) => JSON.stringify(r) + '\n').join('') + tail);
}

/** The store file as another program sees it; WAL without shared memory needs the exclusive lock first. */
export function openRaw(path: string): InstanceType<typeof sqlite.Database> {
  const db = new sqlite.Database(path);
  db.exec('PRAGMA locking_mode=EXCLUSIVE');
  return db;
}

/** The request ids in the store's usage table, in the order they were stored. */
export function storedIds(path: string): string[] {
  const db = openRaw(path);
  try {
    return db.all('SELECT request_id FROM usage ORDER BY id').map((r) => String(r.request_id));
  } finally {
    db.close();
  }
}

/**
 * A real actor system with the store actor on its `tenancy` thread over `path`, and
 * what an admin port in front of it needs besides its tenancy option (no fleet, no
 * admission, no token).
 */
export async function storeBehindAdmin(path: string): Promise<{ system: ActorSystem; store: ActorRef<TenancyMsg>; admin: Omit<AdminPortOptions, 'tenancy'> }> {
  const system = await ActorSystem.start({ threads: [{ name: 'tenancy' }], askTimeoutMs: 10_000 });
  const store = await system.spawn(storeActor, { address: TENANCY_STORE, thread: 'tenancy', args: { path, journalDir: journalDirOf(path), retentionDays: 30 } });
  const admin = {
    system,
    table: new EndpointTable({ connectTimeoutMs: 1_000, health: { cooldownFailures: 2, cooldownMs: 1_000, breakerFailures: 5, openMs: 10_000, maxOpenMs: 60_000 } }),
    registries: [],
    accounting: system.ref(ACCOUNTING),
    admission: null,
    token: undefined,
    control: null,
  };
  return { system, store, admin };
}
