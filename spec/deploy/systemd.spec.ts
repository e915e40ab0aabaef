// The systemd units are the contract between llmgw and the host: they must parse, start
// the right role on the config under /etc/llmgw, outwait the server's graceful shutdown,
// and never let a restart of the agent take its engines down.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { parse as parseYaml } from 'yaml';
import { configSchema } from '../../src/config/schema.js';
import { parseUnitFile, timeSpanMs, unitValue, type UnitFile } from './unit-file.js';
import { repoFile } from './repo.js';

const serverPath = repoFile('deploy/systemd/llmgw-server.service');
const agentPath = repoFile('deploy/systemd/llmgw-agent.service');
const server = parseUnitFile(readFileSync(serverPath, 'utf8'), serverPath);
const agent = parseUnitFile(readFileSync(agentPath, 'utf8'), agentPath);

function common(unit: UnitFile, role: string, config: string): void {
  assert.equal([...unit.keys()], ['Unit', 'Service', 'Install']);
  const user = unitValue(unit, 'Service', 'User');
  assert.ok(user !== undefined && user !== 'root', `a dedicated user, not ${user}`);
  assert.is(unitValue(unit, 'Service', 'ExecStart'), `/usr/local/bin/llmgw run --role=${role} --config ${config}`);
  assert.is(unitValue(unit, 'Service', 'Restart'), 'on-failure');
  assert.match(unitValue(unit, 'Service', 'LimitNOFILE') ?? '', /^\d+$/);
  assert.is(unitValue(unit, 'Install', 'WantedBy'), 'multi-user.target');
  assert.is(unitValue(unit, 'Service', 'NoNewPrivileges'), 'true');
}

test('the server unit starts the server role on /etc/llmgw/llmgw.yaml as its own user, hardened', () => {
  common(server, 'server', '/etc/llmgw/llmgw.yaml');
  for (const key of ['ProtectSystem', 'ProtectHome', 'PrivateDevices', 'PrivateTmp']) assert.ok(unitValue(server, 'Service', key), `${key} is set`);
  assert.is(unitValue(server, 'Service', 'ProtectSystem'), 'strict');
  assert.is(unitValue(server, 'Service', 'MemoryDenyWriteExecute'), undefined, "V8's JIT needs writable executable memory");
});

test("the server unit waits longer than the server's graceful shutdown before SIGKILL", () => {
  const shutdownMs = configSchema.properties!.runtime!.properties!.shutdown_timeout_ms!.default as number;
  const stopMs = timeSpanMs(unitValue(server, 'Service', 'TimeoutStopSec') ?? '');
  assert.ok(stopMs >= shutdownMs + 10_000, `TimeoutStopSec ${stopMs} ms leaves room beyond runtime.shutdown_timeout_ms ${shutdownMs} ms`);
});

test('the agent unit signals only the agent on stop, so its engines keep serving', () => {
  common(agent, 'agent', '/etc/llmgw/agent.yaml');
  assert.is(unitValue(agent, 'Service', 'KillMode'), 'process');
  assert.ok(unitValue(agent, 'Service', 'TimeoutStopSec'));
});

test('the agent unit leaves the GPU and InfiniBand devices and a shared /tmp to its engines', () => {
  // Each of these hides /dev/nvidia* or /dev/infiniband (ProtectClock sets a device
  // policy), or removes a /tmp that adopted engines still use.
  for (const key of ['PrivateDevices', 'DevicePolicy', 'DeviceAllow', 'ProtectClock', 'PrivateTmp', 'MemoryDenyWriteExecute', 'RestrictAddressFamilies']) {
    assert.is(unitValue(agent, 'Service', key), undefined, `${key} is not set`);
  }
  assert.is(unitValue(agent, 'Service', 'LimitMEMLOCK'), 'infinity', 'RDMA pins memory');
});

test("the agent unit's state directory is the example config's state_dir", () => {
  const example = parseYaml(readFileSync(repoFile('examples/agent.yaml'), 'utf8')) as { state_dir: string };
  assert.is(`/var/lib/${unitValue(agent, 'Service', 'StateDirectory')}`, example.state_dir);
});

test('systemd-analyze verify finds nothing but the binary that is not installed here', () => {
  const r = spawnSync('systemd-analyze', ['verify', '--man=no', serverPath, agentPath], { encoding: 'utf8' });
  if (r.error) return; // not on this machine: the parse above is the check
  const problems = `${r.stdout}${r.stderr}`
    .split('\n')
    .filter((l) => l.trim() !== '' && !/Command \/usr\/local\/bin\/llmgw is not executable/.test(l));
  assert.equal(problems, []);
});

test('the unit parser refuses what systemd would not read and reads time spans as systemd does', () => {
  assert.throws(() => parseUnitFile('[Service]\nUser llmgw\n', 'x'), /x:2: neither a section/);
  assert.throws(() => parseUnitFile('User=llmgw\n', 'x'), /before any \[Section\]/);
  const u = parseUnitFile('[Service]\nExecStart=/bin/a \\\n  --b\nRestart=always\nRestart=on-failure\n', 'x');
  assert.is(unitValue(u, 'Service', 'ExecStart'), '/bin/a  --b');
  assert.is(unitValue(u, 'Service', 'Restart'), 'on-failure', 'the last assignment wins');
  assert.is(timeSpanMs('30'), 30_000);
  assert.is(timeSpanMs('1min 30s'), 90_000);
  assert.throws(() => timeSpanMs('30 parsecs'), /unknown time unit/);
});

test.run();
