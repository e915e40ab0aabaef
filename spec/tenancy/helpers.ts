import { appendFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sqlite from 'node-sqlite3-wasm';
import type { Logger } from '../../src/log.js';
import type { BilledRecord } from '../../src/messages/tenancy.js';
import { segmentPath } from '../../src/tenancy/journal-segments.js';

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

/** The request ids in the store's usage table, read as another program would. */
export function storedIds(path: string): string[] {
  const db = new sqlite.Database(path);
  try {
    db.exec('PRAGMA locking_mode=EXCLUSIVE');
    return db.all('SELECT request_id FROM usage ORDER BY id').map((r) => String(r.request_id));
  } finally {
    db.close();
  }
}
