import { rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { defaultMgmtAddr, interfaceOf, loadAgentConfig } from '../../src/agent/config/load.js';
import type { LlmgwError } from '../../src/errors.js';
import { tempDir } from './supervisor/helpers.js';

const dir = tempDir('llmgw-agent-config-');
let files = 0;

function file(text: string): string {
  const path = join(dir, `agent-${files++}.yaml`);
  writeFileSync(path, text);
  return path;
}

test.after(() => rmSync(dir, { recursive: true }));

function problems(text: string): string[] {
  try {
    loadAgentConfig(file(text));
  } catch (err) {
    assert.is((err as LlmgwError).code, 'LLMGW_CONFIG_INVALID');
    return (err as LlmgwError).message.split('\n').map((l) => l.replace(/^.*agent-\d+\.yaml: /, ''));
  }
  return assert.unreachable('the config was accepted') as never;
}

test('no config file means every default, the state directory made absolute', () => {
  const c = loadAgentConfig(undefined);
  assert.is(c.listen, '127.0.0.1:4100');
  assert.is(c.state_dir, resolve('.llmgw-state/agent'));
  assert.is(c.stop_timeout_ms, 60_000);
  assert.equal(c.engines, { vllm: 'vllm', python: 'python3', ray: 'ray' });
  assert.equal(c.fabrics, {});
  assert.ok(Object.isFrozen(c.engines));
  assert.is(c.node_id, hostname());
  assert.is(c.server, undefined, 'no server: the agent runs standalone');
  assert.is(c.heartbeat_interval_ms, 5_000);
  assert.is(c.insecure, false);
});

test('the management address defaults to the first non-internal IPv4 address, else loopback', () => {
  const nic = (address: string, family: 'IPv4' | 'IPv6', internal: boolean) => ({ address, family, internal, netmask: '', mac: '', cidr: null }) as never;
  assert.is(defaultMgmtAddr({ lo: [nic('127.0.0.1', 'IPv4', true)], eth0: [nic('fe80::1', 'IPv6', false), nic('10.0.0.5', 'IPv4', false)], eth1: [nic('10.1.0.5', 'IPv4', false)] }), '10.0.0.5');
  assert.is(defaultMgmtAddr({ lo: [nic('127.0.0.1', 'IPv4', true)], eth0: [nic('fe80::1', 'IPv6', false)] }), '127.0.0.1');
  assert.is(defaultMgmtAddr({}), '127.0.0.1');
});

test('the management interface is the one holding the address; any 127.x address is on loopback', () => {
  const nic = (address: string, family: 'IPv4' | 'IPv6', internal: boolean) => ({ address, family, internal, netmask: '', mac: '', cidr: null }) as never;
  const nics = { lo: [nic('127.0.0.1', 'IPv4', true)], eth0: [nic('10.0.0.5', 'IPv4', false)], ib0: [nic('10.9.0.5', 'IPv4', false)] };
  assert.is(interfaceOf('10.0.0.5', nics), 'eth0');
  assert.is(interfaceOf('127.0.0.3', nics), 'lo', 'Linux routes 127/8 to lo though it lists only 127.0.0.1');
  assert.is(interfaceOf('192.168.1.1', nics), '', 'not on this machine: left for the operator to set');
});

test('a fleet member: node id, server, management address and TLS files as given, the paths made absolute', () => {
  const pem = file('-----BEGIN CERTIFICATE-----\n');
  const c = loadAgentConfig(file(`node_id: gpu-a.dc1\nserver: https://control:4002\nmgmt_addr: 10.0.0.5\ntls: { ca: ${pem}, cert: ${pem}, key: ${pem} }\nheartbeat_interval_ms: 1000\n`));
  assert.is(c.node_id, 'gpu-a.dc1');
  assert.is(c.server, 'https://control:4002');
  assert.is(c.mgmt_addr, '10.0.0.5');
  assert.equal(c.tls, { ca: pem, cert: pem, key: pem });
  assert.is(c.heartbeat_interval_ms, 1_000);
  assert.ok(Object.isFrozen(c.tls));
});

test('plaintext to an http:// server when asked for by name', () => {
  const c = loadAgentConfig(file('server: http://127.0.0.1:4002\ninsecure: true\n'));
  assert.is(c.insecure, true);
  assert.is(c.tls, undefined);
});

test('a server needs exactly one of tls and insecure, and a scheme that agrees with it', () => {
  const pem = file('pem\n');
  const tls = `tls: { ca: ${pem}, cert: ${pem}, key: ${pem} }`;
  assert.equal(problems('server: https://control:4002\n'), ['server: needs tls (ca, cert, key) for mTLS, or insecure: true to dial plaintext HTTP/2 on a trusted network']);
  assert.equal(problems(`server: https://control:4002\n${tls}\ninsecure: true\n`), ['insecure: tls is set too; choose one: tls for mTLS, insecure: true for plaintext on a trusted network']);
  assert.equal(problems('server: https://control:4002\ninsecure: true\n'), ['server: insecure: true dials plaintext, so the URL must be http://, not https://control:4002']);
  assert.equal(problems(`server: http://control:4002\n${tls}\n`), ['server: tls is set, so the URL must be https://, not http://control:4002 (plaintext needs insecure: true instead of tls)']);
});

test('unreadable TLS files, a bad URL, node id and management address are each named', () => {
  const pem = file('pem\n');
  assert.equal(problems(`server: control:4002\nnode_id: "-gpu a"\nmgmt_addr: eth0\n`), ['server: must be an http(s) URL (e.g. http://10.0.0.5:8000), got "control:4002"']);
  assert.equal(problems(`server: https://control:4002\nnode_id: "gpu a"\nmgmt_addr: eth0\ntls: { ca: /nonexistent/ca.pem, cert: ${pem}, key: ${pem} }\n`), [
    `node_id: must be a host name (letters, digits, '.', '_' and '-', starting and ending with a letter or digit), not "gpu a"`,
    'mgmt_addr: must be an IP address other nodes can reach (10.0.0.5), not "eth0"',
    'tls.ca: cannot read /nonexistent/ca.pem: no such file (ENOENT)',
  ]);
  assert.equal(problems('tls: { ca: x }\nheartbeat_interval_ms: 0\n'), ['tls.cert: is required', 'tls.key: is required', 'heartbeat_interval_ms: must be ≥ 1']);
});

test('the file and --listen are applied', () => {
  const c = loadAgentConfig(file('stop_timeout_ms: 5000\nengines: { vllm: /opt/vllm/bin/vllm }\nfabrics: { ib-a: [mlx5_0, mlx5_1] }\n'), { listen: '[::1]:4200' });
  assert.is(c.listen, '[::1]:4200');
  assert.is(c.stop_timeout_ms, 5_000);
  assert.is(c.engines.vllm, '/opt/vllm/bin/vllm');
  assert.is(c.engines.ray, 'ray');
  assert.equal(c.fabrics, { 'ib-a': ['mlx5_0', 'mlx5_1'] });
});

test('every problem is reported at once, each with its path and a reason', () => {
  assert.equal(problems('stop_timout_ms: 5\nsettle_ms: 0\nengines: { vllm: "" }\n'), [
    "unknown key 'stop_timout_ms' (did you mean 'stop_timeout_ms'?)",
    'settle_ms: must be ≥ 1',
    'engines.vllm: must not be empty',
  ]);
});

test('a control interface off loopback, a fabric without HCAs and an HCA on two fabrics are refused', () => {
  assert.equal(problems('listen: "10.0.0.5:4100"\nfabrics: { ib-a: [mlx5_0], ib-b: [mlx5_0], ib-c: [] }\n'), [
    'listen: must be a loopback address (127.0.0.1, ::1, localhost), not 10.0.0.5: the control interface has no authentication and starts processes',
    'fabrics: HCA mlx5_0 is claimed by both ib-a and ib-b: an adapter is cabled to one fabric; fix the label that is wrong',
    'fabrics: fabric ib-c lists no HCAs: name its adapters (e.g. [mlx5_0, mlx5_1]) or remove it',
  ]);
});

test('an unreadable file says why', () => {
  assert.throws(() => loadAgentConfig('/nonexistent/agent.yaml'), /cannot read the config file: no such file or directory \(ENOENT\)/);
});

test.run();
