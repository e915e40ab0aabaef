// The real processes of tenancy's end-to-end specs: sim engines, a server whose
// `tenancy.store` lives in a temporary folder, and `llmgw ctl` for every admin step.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import { runCli } from '../support/cli.js';
import { startServer, writeConfig, type StartedServer } from '../support/process.js';
import { startSim, type SimProcess } from '../sim/helpers.js';

/** A server in front of `sims` (model name → engine), its store at `store`, admission on as by default. */
export function tenancyServer(store: string, sims: ReadonlyMap<string, SimProcess>): Promise<StartedServer> {
  const models = [...sims.keys()];
  const config = writeConfig(
    `listen: "127.0.0.1:0"
admin_listen: "127.0.0.1:0"
router: { poll_interval_ms: 100 }
models: [${models.map((m) => `{ name: ${m} }`).join(', ')}]
endpoints: [${models.map((m) => `{ id: ${m}-0, url: "${sims.get(m)!.url}", models: [${m}] }`).join(', ')}]
tenancy: { store: "${store}" }
`,
  );
  // The default 15 s is for a cold start; this box is shared with other builds.
  return startServer(config, { timeoutMs: 60_000 });
}

/** Sim engines by model name, `speed` times as fast as a GPU: by default a short answer takes milliseconds. */
export async function startSims(models: readonly string[], speed = 1000): Promise<Map<string, SimProcess>> {
  const sims = new Map<string, SimProcess>();
  for (const m of models) sims.set(m, await startSim(m, ['--speed', String(speed)]));
  return sims;
}

/** A temporary folder holding the store, removed with `remove`. */
export function storeDir(): { store: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'llmgw-tenancy-e2e-'));
  return { store: join(dir, 'tenancy.db'), remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** `llmgw ctl ARGS --admin ADMIN --json`, which must succeed; its parsed output. */
export async function ctlJson<T = unknown>(admin: string, ...args: string[]): Promise<T> {
  const r = await runCli(['ctl', ...args, '--admin', admin, '--json'], {}, 60_000);
  assert.is(r.code, 0, `ctl ${args.join(' ')}: ${r.stderr}`);
  return JSON.parse(r.stdout) as T;
}

/** `llmgw ctl ARGS --admin ADMIN`, which must succeed. */
export async function ctl(admin: string, ...args: string[]): Promise<string> {
  const r = await runCli(['ctl', ...args, '--admin', admin], {}, 60_000);
  assert.is(r.code, 0, `ctl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

export interface IssuedKey {
  id: string;
  key: string;
  prefix: string;
}

/** Creates org `acme`, team `ml` and project `chat` through ctl. */
export async function createTree(admin: string): Promise<void> {
  await ctlJson(admin, 'orgs', 'create', 'acme');
  await ctlJson(admin, 'teams', 'create', 'ml', '--org', 'acme');
  await ctlJson(admin, 'projects', 'create', 'chat', '--team', 'ml');
}

export function createKey(admin: string, name: string, ...extra: string[]): Promise<IssuedKey> {
  return ctlJson<IssuedKey>(admin, 'keys', 'create', '--project', 'chat', '--name', name, ...extra);
}

/** One row of `ctl usage --json`. */
export interface UsageRow {
  id: string;
  name: string;
  requests: number;
  promptTokens: number;
  completionTokens: number;
  units: number;
  errors: number;
}

/** The usage row of key `keyId`, by `ctl usage --by key --json`. */
export async function usageOf(admin: string, keyId: string): Promise<UsageRow | undefined> {
  const rows = await ctlJson<UsageRow[]>(admin, 'usage', '--by', 'key');
  return rows.find((r) => r.id === keyId);
}
