// The admin port's tenancy routes over real HTTP: a real actor system with the store
// actor on its own `tenancy` thread over a temporary file, and the real admin port on
// loopback ports, one with tenancy and one without.
import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { suite } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { createAdminPort } from '../../src/admin/admin-port.js';
import { TENANCY_BODY_BYTES, TENANCY_OFF } from '../../src/admin/tenancy-routes.js';
import type { TenancyChange } from '../../src/messages/tenancy.js';
import { drain, listen } from '../../src/net/http-listen.js';
import type { ActorSystem } from '../../src/runtime/index.js';
import { CtlKeysCreateCommand, CtlKeysRotateCommand } from '../../src/cli/commands/ctl-tenancy-keys.js';
import { CtlLimitsSetCommand } from '../../src/cli/commands/ctl-tenancy-limits.js';
import { CtlOrgsCreateCommand } from '../../src/cli/commands/ctl-tenancy-tree.js';
import { CtlAuditCommand } from '../../src/cli/commands/ctl-tenancy-usage.js';
import { hostname } from 'node:os';
import { adminActor } from '../../src/cli/admin-client.js';
import { runInProcess } from '../support/cli.js';
import { storeBehindAdmin } from '../tenancy/helpers.js';

const test = suite('admin port: the tenancy routes');
let dir: string;
let system: ActorSystem;
let onPort: Server;
let offPort: Server;
let on: string;
let off: string;
const changes: TenancyChange[] = [];

test.before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'llmgw-tenancy-routes-'));
  const path = join(dir, 'tenancy.db');
  const started = await storeBehindAdmin(path);
  system = started.system;
  const { store, admin: common } = started;
  const applyChange = (c: TenancyChange): void => {
    // A directory that cannot take the change must fail the route: the caller would
    // otherwise be told of a key that does not work.
    if (c.orgs?.some((o) => o.name === 'unappliable')) throw new Error('the directory refused the change');
    changes.push(c);
  };
  onPort = createAdminPort({ ...common, tenancy: { store, applyChange } });
  offPort = createAdminPort({ ...common, tenancy: { store: null, applyChange } });
  on = await listen(onPort, '127.0.0.1:0', { key: 'admin_listen' });
  off = await listen(offPort, '127.0.0.1:0', { key: 'admin_listen' });
});
test.after(async () => {
  await Promise.all([onPort && drain(onPort, 1_000), offPort && drain(offPort, 1_000)]);
  await system?.shutdown();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

async function call(method: Method, path: string, body?: unknown, opts: { admin?: string; actor?: string; raw?: string } = {}): Promise<{ status: number; allow: string | undefined; body: any }> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (opts.actor !== undefined) headers['x-llmgw-actor'] = opts.actor;
  const res = await request(`${opts.admin ?? on}/admin/v1/tenancy/${path}`, { method, headers, body: opts.raw ?? (body === undefined ? undefined : JSON.stringify(body)) });
  const allow = res.headers.allow;
  return { status: res.statusCode, allow: typeof allow === 'string' ? allow : undefined, body: await res.body.json() };
}

const ROUTES: [Method, string, unknown?][] = [
  ['GET', 'orgs'],
  ['POST', 'orgs', { name: 'acme' }],
  ['GET', 'orgs/acme'],
  ['GET', 'teams?parent=acme'],
  ['POST', 'teams', { name: 'ml', org: 'acme' }],
  ['POST', 'projects', { name: 'chat', team: 'ml' }],
  ['GET', 'keys'],
  ['POST', 'keys', { project: 'chat' }],
  ['GET', 'keys/key_1'],
  ['POST', 'keys/key_1/revoke'],
  ['POST', 'keys/key_1/rotate', { grace: '1h' }],
  ['GET', 'limits'],
  ['GET', 'limits/org/acme'],
  ['PUT', 'limits/org/acme', { rpm: 10 }],
  ['POST', 'limits/org/acme', { rpm: 10 }],
  ['DELETE', 'limits/org/acme'],
  ['GET', 'usage?by=model'],
  ['GET', 'audit'],
];

test('without tenancy.store every tenancy route answers 409 LLMGW_TENANCY_OFF, saying what to set', async () => {
  for (const [method, path, body] of ROUTES) {
    const r = await call(method, path, body, { admin: off });
    assert.is(r.status, 409, `${method} ${path}`);
    assert.equal(r.body.error, { message: TENANCY_OFF, type: 'invalid_request_error', param: null, code: 'tenancy_off' }, `${method} ${path}`);
  }
  assert.match(TENANCY_OFF, /tenancy\.store/);
});

const ids: { org?: string; project?: string; key?: string } = {};

test('creating an org, team, project and key answers the entity once its change is applied', async () => {
  changes.length = 0;
  const org = await call('POST', 'orgs', { name: 'acme' });
  assert.is(org.status, 200);
  assert.is(org.body.name, 'acme');
  ids.org = org.body.id;
  assert.equal(changes.at(-1), { orgs: [org.body] });
  const team = await call('POST', 'teams', { name: 'ml', org: 'acme' });
  assert.is(team.body.orgId, ids.org, 'the org named by name');
  const project = await call('POST', 'projects', { name: 'chat', team: team.body.id });
  assert.is(project.body.teamId, team.body.id, 'the team named by id');
  ids.project = project.body.id;
  const key = await call('POST', 'keys', { project: 'chat', name: 'ci', expiresIn: '30d' });
  assert.is(key.status, 200);
  assert.match(key.body.key, /^sk-llmgw-/);
  assert.is(key.body.record.name, 'ci');
  assert.ok(Math.abs(key.body.record.expiresAt - (Date.now() + 30 * 86_400_000)) < 60_000, 'expiresIn is a span from now');
  assert.is(key.body.record.hash, undefined, 'the admin API never shows a key hash');
  ids.key = key.body.record.id;
  assert.is(changes.length, 4, 'one change applied per mutation');
  assert.is(changes.at(-1)!.keys![0]!.id, ids.key);
  assert.match(changes.at(-1)!.keys![0]!.hash, /^[0-9a-f]{64}$/, 'the directory gets the hash it authenticates with');
});

test('a change the directory cannot apply fails the route: no caller is told of a key that does not work', async () => {
  const r = await call('POST', 'orgs', { name: 'unappliable' });
  assert.is(r.status, 500);
  assert.match(r.body.error.message, /the directory refused the change/);
});

test('revoke, rotate (grace in the body, 24h by default), limits set and clear reach the store; keys show without hashes', async () => {
  const rotated = await call('POST', `keys/${ids.key}/rotate`, { grace: '1h' });
  assert.is(rotated.status, 200, JSON.stringify(rotated.body));
  assert.ok(Math.abs(rotated.body.old.expiresAt - (Date.now() + 3_600_000)) < 60_000);
  assert.match(rotated.body.issued.key, /^sk-llmgw-/);
  assert.is(rotated.body.old.hash, undefined);
  assert.is(rotated.body.issued.record.hash, undefined);
  const again = await call('POST', `keys/${rotated.body.issued.record.id}/rotate`);
  assert.ok(Math.abs(again.body.old.expiresAt - (Date.now() + 86_400_000)) < 60_000, 'no body: the default grace');
  const revoked = await call('POST', `keys/${ids.key}/revoke`);
  assert.is(revoked.status, 200);
  assert.type(revoked.body.revokedAt, 'number');
  assert.is(revoked.body.hash, undefined);
  assert.is(changes.at(-1)!.keys![0]!.revokedAt, revoked.body.revokedAt, 'the revocation reached the directory');
  const set = await call('PUT', 'limits/project/chat', { rpm: 60, budget: 10, period: 'month', models: ['llama'] });
  assert.equal(set.body, { scope: 'project', scopeId: ids.project, rpm: 60, tpm: null, budget: 10, period: 'month', models: ['llama'], band: null, profile: null });
  assert.equal(changes.at(-1), { limits: [set.body] });
  const cleared = await call('POST', 'limits/project/chat', { budget: null });
  assert.equal([cleared.body.budget, cleared.body.period, cleared.body.rpm], [null, null, 60], 'clearing the budget clears its period; the rest stays');
  assert.equal((await call('GET', 'limits/project/chat')).body, [cleared.body]);
  const dropped = await call('DELETE', 'limits/project/chat');
  assert.equal(dropped.body, { scope: 'project', ref: 'chat', cleared: true });
  assert.equal(changes.at(-1)!.clearedLimits, [{ scope: 'project', scopeId: ids.project }]);
  assert.equal((await call('GET', 'limits')).body, []);
  const list = await call('GET', 'keys?parent=chat');
  assert.is(list.body.length, 3);
  assert.ok(list.body.every((k: { hash?: string }) => k.hash === undefined));
  const show = await call('GET', `keys/${ids.key}`);
  assert.is(show.body.entity.id, ids.key);
  assert.is(show.body.entity.hash, undefined);
});

test('the audit actor is the stated x-llmgw-actor, else the peer address', async () => {
  await call('POST', 'orgs', { name: 'by-alice' }, { actor: 'alice@build-01' });
  await call('POST', 'orgs', { name: 'anonymous' });
  const audit = await call('GET', 'audit?limit=2');
  assert.is(audit.status, 200);
  assert.equal(audit.body.map((e: { actor: string; action: string; detail: { name: string } }) => [e.actor, e.action, e.detail.name]), [
    ['127.0.0.1', 'org.create', 'anonymous'],
    ['alice@build-01', 'org.create', 'by-alice'],
  ]);
});

test('usage and audit answer through their queries', async () => {
  const usage = await call('GET', `usage?by=project&since=2026-12-01&until=2126-12-02T00:00Z&of=org:${ids.org}`);
  assert.is(usage.status, 200, JSON.stringify(usage.body));
  assert.equal(usage.body, [], 'nothing journaled yet');
  const unknown = await call('GET', 'usage?of=team:nope');
  assert.is(unknown.status, 404);
  assert.is((await call('GET', 'audit?since=2126-01-01')).body.length, 0);
});

test('bad input is a 400 that names the field and what it takes', async () => {
  const cases: [Method, string, unknown, RegExp][] = [
    ['POST', 'orgs', { name: 'a', color: 'red' }, /unknown field 'color' in the body of an organization; it takes name/],
    ['POST', 'orgs', {}, /an organization needs 'name'/],
    ['POST', 'orgs', { name: 7 }, /'name' must be a string, not a number \(7\)/],
    ['POST', 'orgs', { name: '' }, /'name' must be 1 to 128 characters/],
    ['POST', 'teams', { name: 'ml' }, /a team needs 'org'/],
    ['POST', 'keys', { project: 'p', expiresIn: 30 }, /'expiresIn' must be a duration such as "30d"/],
    ['POST', 'keys', { project: 'p', expiresIn: '30 days' }, /'expiresIn' must be a duration, a whole number and a unit/],
    ['POST', 'keys/key_1/rotate', { grace: '1y' }, /'grace' must be a duration/],
    ['POST', 'keys/key_1/revoke', { now: true }, /unknown field 'now'/],
    ['PUT', 'limits/org/acme', { rpm: -1 }, /'rpm' must be a whole number of 0 or more, or null to clear it, not a number \(-1\)/],
    ['PUT', 'limits/org/acme', { tpm: 1.5 }, /'tpm' must be a whole number/],
    ['PUT', 'limits/org/acme', { rpm: '10' }, /'rpm' must be a whole number .* not a string \("10"\)/],
    ['PUT', 'limits/org/acme', { period: 'day' }, /a period needs its budget/],
    ['PUT', 'limits/org/acme', { budget: 5 }, /a budget needs its period/],
    ['PUT', 'limits/org/acme', { budget: 5, period: 'year' }, /'period' must be one of day, month/],
    ['PUT', 'limits/org/acme', { period: null }, /'period' is cleared with its budget/],
    ['PUT', 'limits/org/acme', { models: [] }, /'models' must be a non-empty array/],
    ['PUT', 'limits/org/acme', { burst: 3 }, /unknown field 'burst' in the body of a limits set/],
    ['PUT', 'limits/org/acme', {}, /a limits set needs at least one of/],
    ['PUT', 'limits/galaxy/acme', { rpm: 1 }, /the scope in .* must be one of org, team, project, key, not 'galaxy'/],
    ['GET', 'usage?by=week', undefined, /by must be one of key, project, team, org, model, not 'week'/],
    ['GET', 'usage?since=yesterday', undefined, /since must be a date \(2026-12-01\)/],
    ['GET', 'usage?since=2026-02-31', undefined, /since must be a date/],
    ['GET', 'usage?since=2026-12-02&until=2026-12-01', undefined, /since .* must be before until/],
    ['GET', 'usage?of=chat', undefined, /of must be SCOPE:REF/],
    ['GET', 'usage?group=key', undefined, /unknown parameter 'group' for usage/],
    ['GET', 'audit?limit=0', undefined, /limit must be a whole number from 1 to 10000, not '0'/],
    ['GET', 'orgs?parent=x', undefined, /organizations have no parent/],
  ];
  for (const [method, path, body, message] of cases) {
    const r = await call(method, path, body);
    assert.is(r.status, 400, `${method} ${path} ${JSON.stringify(body)}: ${JSON.stringify(r.body)}`);
    assert.is(r.body.error.code, 'invalid_request', `${method} ${path}`);
    assert.match(r.body.error.message, message, `${method} ${path}`);
  }
  const notJson = await call('POST', 'orgs', undefined, { raw: '{"name":' });
  assert.is(notJson.status, 400);
  assert.match(notJson.body.error.message, /the body is not JSON/);
  const array = await call('POST', 'orgs', undefined, { raw: '["acme"]' });
  assert.match(array.body.error.message, /the body must be a JSON object/);
  const huge = await call('POST', 'orgs', undefined, { raw: JSON.stringify({ name: 'x'.repeat(TENANCY_BODY_BYTES) }) });
  assert.is(huge.status, 413);
  assert.match(huge.body.error.message, new RegExp(`at most ${TENANCY_BODY_BYTES} bytes`));
});

test('a method a path does not take is a 405 with Allow; an unknown path a 404; the store\'s refusal keeps its code', async () => {
  const put = await call('PUT', 'orgs', { name: 'a' });
  assert.is(put.status, 405);
  assert.is(put.allow, 'GET, POST');
  assert.is((await call('GET', 'keys/key_1/rotate')).allow, 'POST');
  assert.is((await call('PATCH' as Method, 'limits/org/acme')).allow, 'GET, PUT, POST, DELETE');
  assert.is((await call('GET', 'galaxies')).status, 404);
  assert.is((await call('POST', 'keys/key_1/burn')).status, 404);
  const missing = await call('POST', 'keys/missing/revoke');
  assert.is(missing.status, 404);
  assert.equal(missing.body.error, { message: "no key has the id or name 'missing'", type: 'invalid_request_error', param: null, code: 'entity_not_found' });
  const taken = await call('POST', 'orgs', { name: 'acme' });
  assert.is(taken.status, 409);
  assert.is(taken.body.error.code, 'entity_conflict');
});

const COMMANDS = [CtlOrgsCreateCommand, CtlKeysCreateCommand, CtlKeysRotateCommand, CtlLimitsSetCommand, CtlAuditCommand];
const ctl = (args: string[], admin = on) => runInProcess(COMMANDS, ['ctl', ...args, '--admin', admin]);

test('ctl keys create --json prints {id, key, prefix}; the table says the key is shown once', async () => {
  const json = await ctl(['keys', 'create', '--project', 'chat', '--name', 'ci', '--json']);
  assert.is(json.code, 0, json.stderr);
  const issued = JSON.parse(json.stdout);
  assert.equal(Object.keys(issued), ['id', 'key', 'prefix']);
  assert.is(changes.at(-1)!.keys![0]!.id, issued.id);
  const table = await ctl(['keys', 'create', '--project', 'chat']);
  assert.match(table.stdout, /^key: sk-llmgw-[0-9A-Za-z]+\nthis key is shown only once/m);
  const rotated = await ctl(['keys', 'rotate', issued.id, '--grace', '0s', '--json']);
  assert.equal(Object.keys(JSON.parse(rotated.stdout)), ['id', 'key', 'prefix']);
  assert.is.not(JSON.parse(rotated.stdout).id, issued.id);
});

test('ctl states its actor as $USER@host; limits set --clear drops the level', async () => {
  assert.is((await ctl(['orgs', 'create', 'by-ctl'])).code, 0);
  const cleared = await ctl(['limits', 'set', '--team', 'ml', '--clear']);
  assert.is(cleared.code, 0, cleared.stderr);
  assert.is(cleared.stdout, 'every limit of team ml is cleared\n');
  const audit = JSON.parse((await ctl(['audit', '--limit', '2', '--json'])).stdout);
  assert.equal(audit.map((e: { actor: string; action: string; targetKind: string }) => [e.actor, e.action, e.targetKind]), [
    [adminActor(), 'limits.clear', 'team'],
    [adminActor(), 'org.create', 'org'],
  ]);
  assert.is(adminActor({ USER: 'alice' }), `alice@${hostname()}`);
  assert.is(adminActor({ LOGNAME: 'bob' }), `bob@${hostname()}`);
});

test('ctl refuses bad flags naming them, before asking; a server without tenancy says what to set', async () => {
  const bad = await ctl(['limits', 'set', '--project', 'chat', '--rpm', 'lots']);
  assert.is(bad.code, 1);
  assert.is(bad.stderr, "llmgw ctl: --rpm must be a whole number, or none to clear it, not 'lots'\n");
  const both = await ctl(['limits', 'set', '--project', 'chat', '--clear', '--rpm', '5']);
  assert.match(both.stderr, /--clear drops every limit of the level: give it without --rpm/);
  const nothing = await ctl(['limits', 'set', '--rpm', '5']);
  assert.is(nothing.stderr, 'llmgw ctl: name the level to set: --org, --team, --project or --key\n');
  const expiry = await ctl(['keys', 'create', '--project', 'chat', '--expires-in', '1 month']);
  assert.match(expiry.stderr, /^llmgw ctl: --expires-in must be a duration/);
  const offCtl = await ctl(['orgs', 'create', 'acme'], off);
  assert.is(offCtl.code, 1);
  assert.is(offCtl.stderr, `llmgw ctl: ${off}/admin/v1/tenancy/orgs: ${TENANCY_OFF}\n`);
});

test.run();
