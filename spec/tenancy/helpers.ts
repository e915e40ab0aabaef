import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BilledRecord } from '../../src/messages/tenancy.js';

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
