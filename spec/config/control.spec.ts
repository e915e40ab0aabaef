// The control plane's server keys: the agent port's address and security, and the
// control loop's timings and port range.
import { chmodSync } from 'node:fs';
import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { parseConfig } from '../../src/config/index.js';
import { BASE, problems, tempFile } from './helpers.js';

const SECURE = BASE.replace('agent_insecure: true\n', '');
const CA = tempFile('ca.pem', '-----BEGIN CERTIFICATE-----\n');
const CERT = tempFile('server.pem', '-----BEGIN CERTIFICATE-----\n');
const KEY = tempFile('server.key', '-----BEGIN PRIVATE KEY-----\n');
const tls = (ca = CA, cert = CERT, key = KEY): string => `agent_tls: { ca: "${ca}", cert: "${cert}", key: "${key}" }\n`;
/** A config whose catalog has no profiles: nothing for a control plane to place. */
const UNPLACED = 'models: [{ name: m }]\nsimulate: [{ model: m }]\n';

test('a catalog with profiles needs agent_tls or agent_insecure', () => {
  assert.equal(problems(SECURE), [
    'llmgw.yaml: agent_tls: is required: models[2] has profiles, so node agents dial the agent port; set agent_tls: {ca, cert, key}, or agent_insecure: true on a trusted network',
  ]);
  const c = parseConfig(SECURE + tls(), 'llmgw.yaml', {});
  assert.equal(c.agent_tls, { ca: CA, cert: CERT, key: KEY });
  assert.is(c.agent_insecure, false);
  assert.is(parseConfig(BASE, 'llmgw.yaml', {}).agent_insecure, true);
});

test('without profiles neither is needed', () => {
  const c = parseConfig(UNPLACED, 'llmgw.yaml', {});
  assert.is(c.agent_tls, undefined);
  assert.is(c.agent_insecure, false);
});

test('agent_tls and agent_insecure together are refused', () => {
  assert.equal(problems(BASE + tls()), ['llmgw.yaml: agent_insecure: cannot be true while agent_tls is set: the agent port is either mTLS or plaintext; remove one']);
  assert.equal(problems(UNPLACED + tls() + 'agent_insecure: true\n'), [
    'llmgw.yaml: agent_insecure: cannot be true while agent_tls is set: the agent port is either mTLS or plaintext; remove one',
  ]);
  // false is the default, so saying it is not a conflict.
  parseConfig(SECURE + tls() + 'agent_insecure: false\n', 'llmgw.yaml', {});
});

test('agent_tls needs all three files', () => {
  assert.equal(problems(`${SECURE}agent_tls: { ca: "${CA}" }\n`), ['llmgw.yaml: agent_tls.cert: is required', 'llmgw.yaml: agent_tls.key: is required']);
  assert.equal(problems(`${SECURE}agent_tls: { ca: "${CA}", cert: "${CERT}", key: "${KEY}", crl: x }\n`), [
    "llmgw.yaml: agent_tls: unknown key 'crl' (known keys: ca, cert, key)",
  ]);
});

test('the TLS files are checked at load, each named with the reason', () => {
  const missing = CA + '.missing';
  assert.equal(problems(SECURE + tls(missing)), [`llmgw.yaml: agent_tls.ca: cannot read ${missing}: no such file or directory (ENOENT)`]);
  const dir = CERT.replace(/\/server\.pem$/, '');
  assert.equal(problems(SECURE + tls(CA, dir)), [`llmgw.yaml: agent_tls.cert: cannot read ${dir}: is a directory, not a file`]);
});

test('an unreadable key file is a config problem', () => {
  if (process.getuid?.() === 0) return; // root reads anything
  const key = tempFile('locked.key', 'secret');
  chmodSync(key, 0o000);
  assert.equal(problems(SECURE + tls(CA, CERT, key)), [`llmgw.yaml: agent_tls.key: cannot read ${key}: permission denied (EACCES)`]);
});

test('a TLS path from the environment is reported against its variable', () => {
  const missing = KEY + '.gone';
  assert.equal(problems(SECURE + tls(), { LLMGW_AGENT_TLS__KEY: missing }), [`env LLMGW_AGENT_TLS__KEY: cannot read ${missing}: no such file or directory (ENOENT)`]);
});

test('agent_listen defaults to loopback and must differ from the other ports', () => {
  assert.is(parseConfig(BASE, 'llmgw.yaml', {}).agent_listen, '127.0.0.1:4002');
  assert.equal(problems(BASE + 'agent_listen: "0.0.0.0:4000"\n'), ['llmgw.yaml: agent_listen: must differ from listen (both use port 4000)']);
  assert.equal(problems(BASE + 'admin_listen: "127.0.0.1:4002"\n'), ['llmgw.yaml: agent_listen: must differ from admin_listen (both use port 4002)']);
  assert.equal(problems(BASE + 'agent_listen: agents\n'), ['llmgw.yaml: agent_listen: must be HOST:PORT (e.g. 127.0.0.1:4000), got "agents"']);
  assert.equal(problems(BASE + 'agent_listen: "10.0.0.1:65536"\n'), ['llmgw.yaml: agent_listen: must be HOST:PORT (e.g. 127.0.0.1:4000), got "10.0.0.1:65536" (ports go up to 65535)']);
  // Without profiles the agent port is not opened, so its default cannot collide.
  parseConfig(UNPLACED + 'listen: "127.0.0.1:4002"\n', 'llmgw.yaml', {});
});

test('control timings have defaults and are timers in ms', () => {
  assert.equal(parseConfig(BASE, 'llmgw.yaml', {}).control, { interval_ms: 1000, unreachable_after_ms: 15000, lost_after_ms: 60000, port_range: [20000, 20999], drain_grace_ms: 120000, settle_ms: 15000 });
  assert.equal(problems(BASE + 'control: { interval_ms: 0, drain_grace_ms: 2147483648 }\n'), [
    'llmgw.yaml: control.drain_grace_ms: must be ≤ 2147483647',
    'llmgw.yaml: control.interval_ms: must be ≥ 1',
  ]);
  assert.is(parseConfig(BASE, 'llmgw.yaml', { LLMGW_CONTROL__INTERVAL_MS: '250' }).control.interval_ms, 250);
});

test('lost_after_ms must exceed unreachable_after_ms, defaults included', () => {
  const why = (lost: number, unreachable: number): string =>
    `llmgw.yaml: control.lost_after_ms: ${lost} must exceed control.unreachable_after_ms (${unreachable}): a silent node is unreachable first and lost only later`;
  assert.equal(problems(BASE + 'control: { unreachable_after_ms: 30000, lost_after_ms: 30000 }\n'), [why(30000, 30000)]);
  assert.equal(problems(BASE + 'control: { lost_after_ms: 10000 }\n'), [why(10000, 15000)]);
  assert.equal(problems(BASE + 'control: { unreachable_after_ms: 90000 }\n'), [why(60000, 90000)]);
  parseConfig(BASE + 'control: { unreachable_after_ms: 1000, lost_after_ms: 1001 }\n', 'llmgw.yaml', {});
});

test('port_range is [lo, hi] with lo ≤ hi, within 1024-65535', () => {
  assert.equal(parseConfig(BASE + 'control: { port_range: [31000, 31000] }\n', 'llmgw.yaml', {}).control.port_range, [31000, 31000], 'one port is room enough');
  assert.equal(problems(BASE + 'control: { port_range: [21000, 20000] }\n'), ['llmgw.yaml: control.port_range: [21000, 20000] is empty: the first port is the lowest, the second the highest']);
  assert.equal(problems(BASE + 'control: { port_range: [80, 65536] }\n'), ['llmgw.yaml: control.port_range[0]: must be ≥ 1024', 'llmgw.yaml: control.port_range[1]: must be ≤ 65535']);
  assert.equal(problems(BASE + 'control: { port_range: [20000] }\n'), ['llmgw.yaml: control.port_range: must list exactly 2 entries, got [20000]']);
  assert.equal(problems(BASE + 'control: { port_range: [20000, 20001, 20002] }\n'), ['llmgw.yaml: control.port_range: must list exactly 2 entries, got [20000,20001,20002]']);
  assert.equal(problems(BASE + 'control: { port_range: "20000-20999" }\n'), ['llmgw.yaml: control.port_range: must be a list, got "20000-20999"']);
});

test('simulated nodes: names unique and host names, at most 64 GPUs each', () => {
  assert.equal(parseConfig(BASE + 'simulate_nodes: [{ name: a }, { name: b, gpus: 2 }]\n', 'llmgw.yaml', {}).simulate_nodes, [
    { name: 'a', gpus: 4 },
    { name: 'b', gpus: 2 },
  ]);
  assert.equal(problems(BASE + 'simulate_nodes: [{ name: a }, { name: b }, { name: a }]\n'), ["llmgw.yaml: simulate_nodes[2].name: 'a' is already taken by simulate_nodes[0].name"]);
  assert.equal(problems(BASE + 'simulate_nodes: [{ name: "a/b" }]\n'), [`llmgw.yaml: simulate_nodes[0].name: must be a host name (letters, digits, '.', '_' and '-', starting and ending with a letter or digit), got "a/b"`]);
  assert.equal(problems(BASE + 'simulate_nodes: [{ name: a, gpus: 65 }]\n'), ['llmgw.yaml: simulate_nodes[0].gpus: must be ≤ 64']);
});

test('simulated nodes need a model with profiles and agent_insecure, each refusal saying why', () => {
  assert.equal(problems(UNPLACED + 'agent_insecure: true\nsimulate_nodes: [{ name: a }]\n'), [
    'llmgw.yaml: simulate_nodes: needs a model with profiles: only the control plane, which runs for such a model, places replicas on nodes; give a model profiles or remove simulate_nodes',
  ]);
  assert.equal(problems(SECURE + tls() + 'simulate_nodes: [{ name: a }]\n'), [
    'llmgw.yaml: simulate_nodes: needs agent_insecure: true: the simulated nodes are agents in this process that dial the agent port in plaintext on loopback, with no client certificate for agent_tls',
  ]);
});

test.run();
