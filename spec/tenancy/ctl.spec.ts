// `llmgw ctl` on tenancy end to end: the real binary against a real admin port whose
// tenancy routes ask the real store actor on its `tenancy` thread over a temporary
// SQLite file. Usage is journaled as the data port does it, one line per request
// appended to the newest segment, and read back through `ctl usage`.
import { createHash } from 'node:crypto';
import { appendFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { suite } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { createAdminPort } from '../../src/admin/admin-port.js';
import type { ApiKey, BilledRecord, TenancyChange } from '../../src/messages/tenancy.js';
import { drain, listen } from '../../src/net/http-listen.js';
import type { ActorSystem } from '../../src/runtime/index.js';
import { journalDirOf, listSegments, segmentPath } from '../../src/tenancy/journal-segments.js';
import { runCli } from '../support/cli.js';
import { storeBehindAdmin } from './helpers.js';

const test = suite('tenancy: llmgw ctl against the store');
let dir: string;
let system: ActorSystem;
let port: Server;
let admin: string;
/** The main thread's view of the keys as the applied changes left it, by hash. */
const directory = new Map<string, ApiKey>();

test.before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'llmgw-tenancy-ctl-'));
  const path = join(dir, 'tenancy.db');
  const started = await storeBehindAdmin(path);
  system = started.system;
  const applyChange = (c: TenancyChange): void => {
    for (const k of c.keys ?? []) directory.set(k.hash, k);
  };
  port = createAdminPort({ ...started.admin, tenancy: { store: started.store, applyChange } });
  admin = await listen(port, '127.0.0.1:0', { key: 'admin_listen' });
});
test.after(async () => {
  if (port) await drain(port, 1_000);
  await system?.shutdown();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const ENV = { USER: 'ops' };
async function ctl(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return runCli(['ctl', ...args, '--admin', admin], ENV);
}
async function ctlJson<T = any>(...args: string[]): Promise<T> {
  const r = await ctl(...args, '--json');
  assert.is(r.code, 0, `ctl ${args.join(' ')}: ${r.stderr}`);
  return JSON.parse(r.stdout) as T;
}

const ids: { org?: string; team?: string; project?: string; key?: string; rotated?: string } = {};

test('orgs, teams, projects and a key are created by names; the key works the moment the command returns', async () => {
  ids.org = (await ctlJson('orgs', 'create', 'acme')).id;
  assert.match(ids.org!, /^org_[0-9A-Za-z]{16}$/);
  ids.team = (await ctlJson('teams', 'create', 'ml', '--org', 'acme')).id;
  ids.project = (await ctlJson('projects', 'create', 'chat', '--team', 'ml')).id;
  assert.match(ids.project!, /^proj_[0-9A-Za-z]{16}$/);
  const issued = await ctlJson<{ id: string; key: string; prefix: string }>('keys', 'create', '--project', 'chat', '--name', 'ci', '--expires-in', '30d');
  assert.equal(Object.keys(issued).sort(), ['id', 'key', 'prefix']);
  assert.match(issued.key, /^sk-llmgw-[0-9A-Za-z]{40,}$/);
  assert.is(issued.prefix, issued.key.slice(0, 'sk-llmgw-'.length + 6));
  ids.key = issued.id;
  const known = directory.get(createHash('sha256').update(issued.key).digest('hex'));
  assert.ok(known, 'the directory had the key before ctl printed it');
  assert.is(known!.id, issued.id);
  const table = await ctl('keys', 'create', '--project', ids.project!);
  assert.is(table.code, 0, table.stderr);
  assert.match(table.stdout, /^key: sk-llmgw-[0-9A-Za-z]+\nthis key is shown only once/m);
});

test('list and show name what was created, by name or id; keys show without their text or hash', async () => {
  assert.equal((await ctlJson('orgs', 'list')).map((o: { name: string }) => o.name), ['acme']);
  assert.equal((await ctlJson('teams', 'list', '--org', ids.org!)).map((t: { name: string }) => t.name), ['ml']);
  assert.equal((await ctlJson('projects', 'list', '--team', 'ml')).map((p: { id: string }) => p.id), [ids.project]);
  const keys = await ctlJson<{ id: string; hash?: string }[]>('keys', 'list', '--project', 'chat');
  assert.is(keys.length, 2);
  assert.ok(keys.every((k) => k.hash === undefined));
  const table = await ctl('keys', 'list', '--project', 'chat');
  assert.match(table.stdout, new RegExp(`^${ids.key} +ci +sk-llmgw-[0-9A-Za-z]{6}… +${ids.project} +expires in (29|30)d +`, 'm'));
  const show = await ctl('projects', 'show', 'chat');
  assert.match(show.stdout, new RegExp(`^id: +${ids.project}\nname: +chat\nteam: +${ids.team}\n`));
  assert.match(show.stdout, /no limits set on this project/);
});

test('limits set and show at a level; none clears one field and keeps the rest', async () => {
  const set = await ctl('limits', 'set', '--project', 'chat', '--rpm', '60', '--budget', '100', '--period', 'month', '--models', 'llmgw-sim,other');
  assert.is(set.code, 0, set.stderr);
  assert.match(set.stdout, new RegExp(`^project +${ids.project} +60 +- +100/month +llmgw-sim,other +- +-$`, 'm'));
  await ctl('limits', 'set', '--project', ids.project!, '--rpm', 'none', '--tpm', '5000');
  const rows = await ctlJson('limits', 'show', '--project', 'chat');
  assert.equal(rows, [{ scope: 'project', scopeId: ids.project, rpm: null, tpm: 5000, budget: 100, period: 'month', models: ['llmgw-sim', 'other'], band: null, profile: null }]);
  await ctl('limits', 'set', '--org', 'acme', '--rpm', '600');
  assert.is((await ctlJson('limits', 'show')).length, 2);
  const cleared = await ctl('limits', 'set', '--org', 'acme', '--clear');
  assert.is(cleared.code, 0, cleared.stderr);
  assert.equal((await ctlJson('limits', 'show')).map((r: { scope: string }) => r.scope), ['project']);
});

test('rotate gives a new key for the same project and name; the old one works for its grace; revoke stops a key', async () => {
  const before = Date.now();
  const rotated = await ctlJson<{ id: string; key: string }>('keys', 'rotate', ids.key!, '--grace', '1h');
  assert.is.not(rotated.id, ids.key);
  ids.rotated = rotated.id;
  assert.is(directory.get(createHash('sha256').update(rotated.key).digest('hex'))?.name, 'ci');
  const old = (await ctlJson('keys', 'show', ids.key!)).entity;
  assert.ok(old.expiresAt >= before + 3_600_000 && old.expiresAt <= Date.now() + 3_600_000, 'the old key expires an hour from the rotation');
  const revoke = await ctl('keys', 'revoke', rotated.id);
  assert.is(revoke.code, 0, revoke.stderr);
  assert.match(revoke.stdout, new RegExp(`^key ${rotated.id} \\(sk-llmgw-[0-9A-Za-z]{6}…\\) is revoked 0s ago\n$`));
  assert.ok([...directory.values()].find((k) => k.id === rotated.id)!.revokedAt !== null, 'the revocation reached the directory');
});

test('usage returns the journaled requests per key and per model', async () => {
  const journal = journalDirOf(join(dir, 'tenancy.db'));
  mkdirSync(journal, { recursive: true });
  const seg = segmentPath(journal, (listSegments(journal).at(-1) ?? 0) + 1);
  const line = (n: number, model: string, status = 200): string => {
    const r: BilledRecord = {
      id: `req-${n}`,
      at: Date.now(),
      path: '/v1/chat/completions',
      modelAsked: model,
      modelServed: model,
      fallback: false,
      endpoint: 'http://127.0.0.1:1',
      status,
      error: status === 200 ? null : 'LLMGW_UPSTREAM_FAILED',
      stream: false,
      promptTokens: 10 * n,
      completionTokens: n,
      cachedTokens: 0,
      usageEstimated: false,
      ttftMs: 5,
      durationMs: 9,
      queueMs: 0,
      band: null,
      attempts: 1,
      scheduleMicros: 3,
      profile: 'default',
      keyId: ids.key!,
      projectId: ids.project!,
      teamId: ids.team!,
      orgId: ids.org!,
      units: 0.5,
    };
    return `${JSON.stringify(r)}\n`;
  };
  appendFileSync(seg, line(1, 'llmgw-sim') + line(2, 'llmgw-sim') + line(3, 'other', 502));
  const byKey = await ctlJson('usage', '--by', 'key');
  assert.equal(byKey.map((r: any) => [r.id, r.name, r.requests, r.promptTokens, r.completionTokens, r.units, r.errors]), [[ids.key, 'ci', 3, 60, 6, 1.5, 1]]);
  const byModel = await ctlJson('usage', '--by', 'model', '--since', '1h', '--project', 'chat');
  assert.equal(byModel.map((r: any) => [r.id, r.requests, r.promptTokens]).sort(), [['llmgw-sim', 2, 30], ['other', 1, 30]]);
  assert.equal(await ctlJson('usage', '--until', '2020-01-01'), [], 'nothing before the records');
  const table = await ctl('usage', '--by', 'org');
  assert.match(table.stdout, new RegExp(`^${ids.org} +acme +3 +60 +6 +0 +1\\.5000 +1$`, 'm'));
});

test('audit shows each mutation, newest first, with who ran ctl', async () => {
  const events = await ctlJson<{ actor: string; action: string; targetId: string }[]>('audit', '--limit', '50');
  const actions = events.map((e) => e.action).reverse();
  for (const a of ['org.create', 'team.create', 'project.create', 'key.create', 'limits.set', 'limits.clear', 'key.rotate', 'key.revoke']) assert.ok(actions.includes(a), `${a} in ${actions.join(', ')}`);
  assert.ok(actions.indexOf('org.create') < actions.indexOf('key.create') && actions.indexOf('key.rotate') < actions.indexOf('key.revoke'), 'in the order they happened');
  assert.ok(events.every((e) => e.actor === `ops@${hostname()}`), JSON.stringify(events.map((e) => e.actor)));
  assert.is(events.find((e) => e.action === 'key.revoke')!.targetId, ids.rotated);
  assert.is((await ctlJson('audit', '--limit', '1')).length, 1);
});

test('the store\'s refusals reach the operator as one line naming what is wrong', async () => {
  const unknown = await ctl('teams', 'create', 'ops', '--org', 'nope');
  assert.is(unknown.code, 1);
  assert.match(unknown.stderr, /^llmgw ctl: .*\/admin\/v1\/tenancy\/teams: no organization has the id or name 'nope'\n$/);
  const taken = await ctl('orgs', 'create', 'acme');
  assert.is(taken.code, 1);
  assert.match(taken.stderr, /organization named 'acme' already exists/);
});

test.run();
