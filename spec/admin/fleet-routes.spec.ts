// The fleet's admin API and the `llmgw ctl` commands on it, end to end: a real actor
// system with an actor at the CONTROL address on its own `control` thread (answering
// from fixed views), the real admin port on a loopback port, and the ctl commands (in
// this process, and once as the real binary). The fleet end-to-end specs cover the real
// control actor; this one pins the HTTP surface and what ctl makes of it.
import type { Server } from 'node:http';
import { request } from 'undici';
import { suite } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { createAdminPort } from '../../src/admin/admin-port.js';
import { NO_CONTROL_PLANE } from '../../src/admin/fleet-routes.js';
import type { ReloadResult } from '../../src/admin/reload-result.js';
import { CtlExplainPlacementCommand } from '../../src/cli/commands/ctl-explain-placement.js';
import { CtlLogsCommand } from '../../src/cli/commands/ctl-logs.js';
import { CtlModelsCommand } from '../../src/cli/commands/ctl-models.js';
import { CtlCordonCommand, CtlDrainCommand, CtlUncordonCommand } from '../../src/cli/commands/ctl-node-commands.js';
import { CtlNodesCommand } from '../../src/cli/commands/ctl-nodes.js';
import { CtlReloadCommand } from '../../src/cli/commands/ctl-reload.js';
import { CtlReplicasCommand } from '../../src/cli/commands/ctl-replicas.js';
import { renderExplanation, renderModels } from '../../src/cli/fleet-tables.js';
import { ACCOUNTING } from '../../src/messages/accounting.js';
import { CONTROL, type NodeView } from '../../src/messages/control.js';
import { drain, listen } from '../../src/net/http-listen.js';
import { EndpointTable } from '../../src/router/endpoint-table.js';
import { ActorSystem } from '../../src/runtime/index.js';
import { runCli, runInProcess } from '../support/cli.js';
import { fixedControl } from './fixtures/fixed-control.js';
import { EXPLANATION, FLEET, MODELS, NODES, OUTPUT, REPLICAS } from './fixtures/fleet-views.js';

const TOKEN = 's3cret';
const COMMANDS = [CtlNodesCommand, CtlModelsCommand, CtlReplicasCommand, CtlExplainPlacementCommand, CtlCordonCommand, CtlUncordonCommand, CtlDrainCommand, CtlLogsCommand, CtlReloadCommand];

const test = suite('admin port: the fleet routes and ctl');
let system: ActorSystem;
let fleetPort: Server;
let barePort: Server;
/** The admin port of a server with a control plane (and the token). */
let fleet: string;
/** The admin port of a server whose config has no profiles: no control plane, no token. */
let bare: string;
let nextReload: ReloadResult;
let reloads = 0;

test.before(async () => {
  system = await ActorSystem.start({ threads: [{ name: 'control' }], askTimeoutMs: 5_000 });
  const control = await system.spawn(fixedControl, { address: CONTROL, thread: 'control', args: FLEET });
  const common = { system, table: new EndpointTable({ connectTimeoutMs: 1_000, health: { cooldownFailures: 2, cooldownMs: 1_000, breakerFailures: 5, openMs: 10_000, maxOpenMs: 60_000 } }), registries: [], accounting: system.ref(ACCOUNTING), admission: null };
  const reload = async (): Promise<ReloadResult> => {
    reloads++;
    return nextReload;
  };
  fleetPort = createAdminPort({ ...common, token: TOKEN, control, reload });
  barePort = createAdminPort({ ...common, token: undefined, control: null });
  fleet = await listen(fleetPort, '127.0.0.1:0', { key: 'admin_listen' });
  bare = await listen(barePort, '127.0.0.1:0', { key: 'admin_listen' });
});
test.after(async () => {
  await Promise.all([fleetPort && drain(fleetPort, 1_000), barePort && drain(barePort, 1_000)]);
  await system?.shutdown();
});

/** One ctl command against `admin` (the fleet's port, with the token, by default). */
const ctl = (args: string[], admin = fleet, token: string | null = TOKEN) =>
  runInProcess(COMMANDS, ['ctl', ...args, '--admin', admin, ...(token === null ? [] : ['--token', token])]);

async function call(method: string, path: string, admin = fleet, token: string | null = TOKEN): Promise<{ status: number; allow: string | undefined; body: any }> {
  const res = await request(`${admin}${path}`, { method: method as 'GET', headers: token === null ? {} : { authorization: `Bearer ${token}` } });
  const allow = res.headers.allow;
  return { status: res.statusCode, allow: typeof allow === 'string' ? allow : undefined, body: await res.body.json() };
}

const nodeState = async (name: string): Promise<string> => ((await call('GET', '/admin/v1/nodes')).body as NodeView[]).find((n) => n.name === name)!.state;

test('ctl nodes: the JSON is the views as the control actor answers them; the table shows every node and GPU', async () => {
  const json = await ctl(['nodes', '--json']);
  assert.is(json.code, 0, json.stderr);
  assert.equal(JSON.parse(json.stdout), NODES);
  const table = await ctl(['nodes']);
  assert.is(table.code, 0, table.stderr);
  const lines = table.stdout.split('\n');
  assert.match(lines[0]!, /^NAME +STATE +AGENT +HEARTBEAT +GPUS +FREE +FABRICS +REPLICAS$/);
  assert.match(table.stdout, /^gpu-a +ready +connected 0\.4\.0 +\d+[smhd] ago +4xH100-80GB +0\/4 +ib-east\(mlx5_0,mlx5_1\) +llama-70b-r1$/m);
  assert.match(table.stdout, /^gpu-c +lost +disconnected +never +- +0\/0 +- +-$/m);
  assert.match(table.stdout, /^gpu-b +3 +H100-80GB +no +- +ECC errors: 3 uncorrectable; held by a foreign process \(pid 4242\)$/m);
  assert.is(lines.filter((l) => /^gpu-[ab] +\d +H100/.test(l)).length, 8, 'one line per GPU');
});

test('ctl models and explain-placement: JSON as answered, tables as rendered', async () => {
  const models = await ctl(['models', '--json']);
  assert.equal(JSON.parse(models.stdout), MODELS);
  assert.is((await ctl(['models'])).stdout, renderModels(MODELS));
  const explain = await ctl(['explain-placement', 'llama-70b', '--json']);
  assert.is(explain.code, 0, explain.stderr);
  assert.equal(JSON.parse(explain.stdout), EXPLANATION);
  assert.is((await ctl(['explain-placement', 'llama-70b'])).stdout, renderExplanation(EXPLANATION));
});

test('ctl replicas: every shard with node, rank, GPUs, port and state; --model asks for one model', async () => {
  const all = await ctl(['replicas', '--json']);
  assert.equal(JSON.parse(all.stdout), REPLICAS);
  const one = await ctl(['replicas', '--model', 'qwen-7b', '--json']);
  assert.equal(JSON.parse(one.stdout), [REPLICAS[1]]);
  const table = await ctl(['replicas']);
  assert.match(table.stdout, /^llama-70b-r1 +llama-70b +h100-tp4-pp2 +ready +\d+[smhd] ago +llama-70b-r1-s0 +gpu-a +0 +0,1,2,3 +8000 +ready$/m);
  assert.match(table.stdout, /^ +llama-70b-r1-s1 +gpu-b +1 +0,1,2 +- +ready$/m);
  assert.match(table.stdout, /^qwen-7b-r4 .* +unknown +shard qwen-7b-r4-s0 failed; node gpu-c lost$/m);
  assert.is((await call('GET', '/admin/v1/replicas?model=')).status, 400, 'an empty model names none');
});

test('an unknown model or node is the control actor\'s refusal: its code and status over HTTP, its message from ctl', async () => {
  const explain = await call('GET', '/admin/v1/placement/nope');
  assert.is(explain.status, 404);
  assert.equal(explain.body.error, { message: "no model 'nope' is in the catalog", type: 'invalid_request_error', param: null, code: 'model_not_found' });
  const byCtl = await ctl(['explain-placement', 'nope']);
  assert.is(byCtl.code, 1);
  assert.is(byCtl.stderr, `llmgw ctl: ${fleet}/admin/v1/placement/nope: no model 'nope' is in the catalog\n`);
  const cordon = await call('POST', '/admin/v1/nodes/gpu-z/cordon');
  assert.is(cordon.status, 404);
  assert.is(cordon.body.error.code, 'node_unknown');
  const drainZ = await ctl(['drain', 'gpu-z']);
  assert.is(drainZ.code, 1);
  assert.is(drainZ.stderr, `llmgw ctl: ${fleet}/admin/v1/nodes/gpu-z/drain: no node 'gpu-z' has registered\n`);
});

test('ctl cordon, drain and uncordon reach the control actor: each says what the node is now, and nodes shows it', async () => {
  const cordon = await ctl(['cordon', 'gpu-a']);
  assert.is(cordon.code, 0, cordon.stderr);
  assert.is(cordon.stdout, 'node gpu-a is cordoned\n');
  assert.is(await nodeState('gpu-a'), 'cordoned');
  const drained = await ctl(['drain', 'gpu-a', '--json']);
  assert.is((JSON.parse(drained.stdout) as NodeView).state, 'draining');
  assert.is(await nodeState('gpu-a'), 'draining');
  assert.is((await ctl(['uncordon', 'gpu-a'])).stdout, 'node gpu-a is ready\n');
  assert.is(await nodeState('gpu-a'), 'ready');
});

test('ctl logs: every shard of a replica or one shard, the last --tail lines; an unreadable shard says why and exits 1', async () => {
  const replica = await ctl(['logs', 'llama-70b-r1']);
  assert.is(replica.code, 0, replica.stderr);
  assert.is(replica.stdout, `==> shard llama-70b-r1-s0 on node gpu-a <==\n${OUTPUT['llama-70b-r1-s0']!.join('\n')}\n\n==> shard llama-70b-r1-s1 on node gpu-b <==\n${OUTPUT['llama-70b-r1-s1']!.join('\n')}\n`);
  const one = await ctl(['logs', 'llama-70b-r1-s0', '--tail', '1', '--json']);
  assert.equal(JSON.parse(one.stdout), [{ shard: 'llama-70b-r1-s0', node: 'gpu-a', lines: ['INFO Uvicorn running on http://10.0.0.1:8000'], error: null }]);
  const lost = await ctl(['logs', 'qwen-7b-r4']);
  assert.is(lost.code, 1);
  assert.match(lost.stdout, /^==> shard qwen-7b-r4-s0 on node gpu-c <==\n\(could not read its output: node gpu-c is lost: its output cannot be read\)\n$/);
  const unknown = await ctl(['logs', 'nothing-here']);
  assert.is(unknown.code, 1);
  assert.is(unknown.stderr, `llmgw ctl: ${fleet}/admin/v1/logs/nothing-here: no replica or shard 'nothing-here'\n`);
  const notNumber = await ctl(['logs', 'llama-70b-r1', '--tail', 'all']);
  assert.is(notNumber.code, 1);
  assert.is(notNumber.stderr, "llmgw ctl: --tail must be a whole number of lines, not 'all'\n");
  for (const tail of ['0', '10001', '-1', '2.5']) {
    const res = await call('GET', `/admin/v1/logs/llama-70b-r1?tail=${tail}`);
    assert.is(res.status, 400, tail);
    assert.is(res.body.error.message, `tail must be a whole number from 1 to 10000, not '${tail}'`);
  }
});

test('ctl reload: what the reload changed, or the file\'s problems and exit 1; --json prints the result either way', async () => {
  nextReload = { ok: true, source: '/etc/llmgw.yaml', models: { added: ['qwen-7b'], removed: [], changed: ['llama-70b'] }, restart_needed: [] };
  const before = reloads;
  const applied = await ctl(['reload']);
  assert.is(applied.code, 0, applied.stderr);
  assert.is(applied.stdout, 'reloaded /etc/llmgw.yaml:\n  added: qwen-7b\n  changed: llama-70b\n');
  assert.is(reloads, before + 1);
  nextReload = { ok: false, source: '/etc/llmgw.yaml', problems: [{ source: '/etc/llmgw.yaml', path: 'models[1].profiles[0].tp', message: 'must be >= 1', line: 14, column: 13 }] };
  const refused = await ctl(['reload']);
  assert.is(refused.code, 1);
  assert.is(refused.stdout, '/etc/llmgw.yaml was not applied; the server runs on as before. Its problems:\n  /etc/llmgw.yaml: models[1].profiles[0].tp: must be >= 1\n');
  const json = await ctl(['reload', '--json']);
  assert.is(json.code, 1);
  assert.equal(JSON.parse(json.stdout), nextReload);
});

test('each fleet route takes one method: another is a 405 naming it in Allow; an unknown path or node action is a 404', async () => {
  const wrong: [string, string, string][] = [
    ['GET', '/admin/v1/reload', 'POST'],
    ['POST', '/admin/v1/nodes', 'GET'],
    ['DELETE', '/admin/v1/replicas', 'GET'],
    ['PUT', '/admin/v1/placement/llama-70b', 'GET'],
    ['GET', '/admin/v1/nodes/gpu-a/cordon', 'POST'],
    ['POST', '/admin/v1/logs/llama-70b-r1', 'GET'],
    ['POST', '/admin/v1/actors', 'GET'],
    ['POST', '/health', 'GET'],
  ];
  for (const [method, path, allow] of wrong) {
    const res = await call(method, path);
    assert.is(res.status, 405, `${method} ${path}`);
    assert.is(res.allow, allow, `${method} ${path}`);
    assert.is(res.body.error.message, `${method} is not allowed on ${path}; it takes ${allow}`);
  }
  assert.is(await nodeState('gpu-a'), 'ready', 'a GET of a node command commands nothing');
  const action = await call('POST', '/admin/v1/nodes/gpu-a/reboot');
  assert.is(action.status, 404);
  assert.is(action.body.error.message, "no node action 'reboot': the actions are cordon, uncordon, drain (POST /admin/v1/nodes/{name}/{action})");
  for (const path of ['/admin/v1/placement', '/admin/v1/placement/', '/admin/v1/nodes/gpu-a', '/admin/v1/logs/a/b', '/admin/v1/fleet']) {
    const res = await call('GET', path);
    assert.is(res.status, 404, path);
    assert.is(res.body.error.message, `no route for GET ${path}`);
  }
  assert.is((await call('POST', '/admin/v1/nowhere')).status, 404);
  assert.is((await call('GET', '/admin/v1/placement/%E0%A4%A')).status, 400, 'bad percent-encoding');
});

test('the fleet routes need the admin token: a refused command never reaches the control actor', async () => {
  for (const [method, path] of [['GET', '/admin/v1/nodes'], ['POST', '/admin/v1/nodes/gpu-b/uncordon'], ['POST', '/admin/v1/reload']] as const) {
    const res = await call(method, path, fleet, null);
    assert.is(res.status, 401, path);
    assert.match(res.body.error.message, /the admin API needs a token and none was sent/);
    assert.is((await call(method, path, fleet, 'guess')).status, 401, path);
  }
  assert.is(await nodeState('gpu-b'), 'cordoned', 'gpu-b stays as the fixture has it');
  const missing = await ctl(['nodes'], fleet, null);
  assert.is(missing.code, 1);
  assert.match(missing.stderr, /^llmgw ctl: \S+: the admin API needs a token and none was sent .*; pass the admin_token with --token or LLMGW_ADMIN_TOKEN\n$/);
  const wrong = await ctl(['cordon', 'gpu-a'], fleet, 'guess');
  assert.is(wrong.code, 1);
  assert.match(wrong.stderr, /the admin token sent is wrong .*; the token from --token is not the server's admin_token\n$/);
});

test('a server without a control plane says so on every fleet route, and ctl prints it', async () => {
  for (const [method, path] of [['GET', '/admin/v1/nodes'], ['GET', '/admin/v1/models'], ['GET', '/admin/v1/replicas'], ['GET', '/admin/v1/placement/llama-70b'], ['POST', '/admin/v1/nodes/gpu-a/drain'], ['GET', '/admin/v1/logs/llama-70b-r1']] as const) {
    const res = await call(method, path, bare, null);
    assert.is(res.status, 409, path);
    assert.equal(res.body.error, { message: NO_CONTROL_PLANE, type: 'invalid_request_error', param: null, code: 'no_control_plane' }, path);
  }
  const nodes = await ctl(['nodes'], bare, null);
  assert.is(nodes.code, 1);
  assert.is(nodes.stderr, `llmgw ctl: ${bare}/admin/v1/nodes: this server runs no control plane: no model in the config has profiles\n`);
  const reload = await ctl(['reload'], bare, null);
  assert.is(reload.code, 1);
  assert.is(reload.stderr, `llmgw ctl: ${bare}/admin/v1/reload: this server does not reload its config while it runs\n`);
});

test('the llmgw binary has the fleet commands, with the connection options before or after the command', async () => {
  const json = await runCli(['ctl', '--admin', fleet, 'models', '--json'], { LLMGW_ADMIN_TOKEN: TOKEN });
  assert.is(json.code, 0, json.stderr);
  assert.equal(JSON.parse(json.stdout), MODELS);
  const refused = await runCli(['ctl', 'explain-placement', 'nope', '--admin', fleet, '--token', TOKEN]);
  assert.is(refused.code, 1);
  assert.is(refused.stderr, `llmgw ctl: ${fleet}/admin/v1/placement/nope: no model 'nope' is in the catalog\n`);
});

test.run();
