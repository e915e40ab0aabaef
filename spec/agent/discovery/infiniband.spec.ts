import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from '../../support/uvu.js';
import * as assert from 'uvu/assert';
import { discoverHcas, isPortActive, parseEnumerated, parseLid, parseLinkLayer, parseNumaNode, parseRate } from '../../../src/agent/discovery/infiniband.js';
import { LlmgwError } from '../../../src/errors.js';
import { FIXTURES, ibRootOf, tempDir } from './fixtures.js';

test('sysfs values parse as the kernel prints them, trailing newline included', () => {
  assert.equal(parseEnumerated('4: ACTIVE\n'), { code: 4, name: 'ACTIVE' });
  assert.equal(parseEnumerated('2: INIT\n'), { code: 2, name: 'INIT' });
  assert.equal(parseEnumerated('5: LinkUp\n'), { code: 5, name: 'LinkUp' });
  assert.equal(parseEnumerated('7: Phy Test\n'), { code: 7, name: 'Phy Test' });
  assert.is(parseRate('400 Gb/sec (4X NDR)\n'), 400);
  assert.is(parseRate('200 Gb/sec (4X HDR)\n'), 200);
  assert.is(parseRate('100 Gb/sec (4X EDR)\n'), 100);
  assert.is(parseRate('2.5 Gb/sec (1X)\n'), 2.5);
  assert.is(parseRate('\n'), null);
  assert.is(parseLid('0x1a\n'), 26);
  assert.is(parseLid('0x0\n'), 0);
  assert.is(parseLid('26\n'), 26);
  assert.is(parseLid('zz\n'), null);
  assert.is(parseNumaNode('1\n'), 1);
  assert.is(parseNumaNode('-1\n'), null);
  assert.is(parseLinkLayer('InfiniBand\n'), 'InfiniBand');
  assert.is(parseLinkLayer('Ethernet\n'), 'Ethernet');
  assert.is(parseLinkLayer('Unknown\n'), 'Unknown');
});

test('the H100 node: four NDR InfiniBand adapters, sorted, with NUMA nodes and LIDs', async () => {
  const { hcas, warnings } = await discoverHcas(ibRootOf('h100-8x'));
  assert.equal(warnings, []);
  assert.equal(
    hcas.map((h) => [h.name, h.numaNode]),
    [
      ['mlx5_0', 0],
      ['mlx5_1', 0],
      ['mlx5_2', 1],
      ['mlx5_3', 1],
    ],
  );
  assert.equal(hcas[0]!.ports, [{ port: 1, state: 'ACTIVE', physState: 'LinkUp', rateGbps: 400, linkLayer: 'InfiniBand', lid: 26 }]);
  assert.equal(
    hcas.map((h) => h.ports[0]!.lid),
    [26, 27, 28, 29],
  );
});

test('the L40S node: its adapter is RoCE (link layer Ethernet, LID 0)', async () => {
  const { hcas } = await discoverHcas(ibRootOf('l40s-4x'));
  assert.equal(hcas[0]!.ports, [{ port: 1, state: 'ACTIVE', physState: 'LinkUp', rateGbps: 100, linkLayer: 'Ethernet', lid: 0 }]);
});

test('the A100 node: a port the subnet manager has not brought up is INIT, not active', async () => {
  const { hcas } = await discoverHcas(ibRootOf('a100-8x'));
  assert.equal(
    hcas.map((h) => [h.name, h.ports[0]!.state, isPortActive(h.ports[0]!)]),
    [
      ['mlx5_0', 'ACTIVE', true],
      ['mlx5_1', 'ACTIVE', true],
      ['mlx5_2', 'ACTIVE', true],
      ['mlx5_3', 'INIT', false],
    ],
  );
  assert.equal(hcas[3]!.ports[0]!.physState, 'LinkUp');
  assert.equal(hcas[3]!.ports[0]!.lid, 0);
});

test('no infiniband directory at all is a node without IB, not an error', async () => {
  assert.equal(await discoverHcas(ibRootOf('no-ib')), { hcas: [], warnings: [] });
});

test('an infiniband path that exists but cannot be read is an error, not "no adapters"', async () => {
  try {
    await discoverHcas(join(FIXTURES, 'README.md')); // a file, not a directory
    assert.unreachable('accepted');
  } catch (err) {
    assert.instance(err, LlmgwError);
    assert.is((err as LlmgwError).code, 'LLMGW_DISCOVERY_FAILED');
  }
});

function write(root: string, path: string, content: string): void {
  mkdirSync(join(root, path, '..'), { recursive: true });
  writeFileSync(join(root, path), content);
}

test('the kernel layout, all symlinks into /sys/devices, reads the same; a broken adapter hides no other', async () => {
  const sys = tempDir();
  const dev = 'devices/pci0000:00/0000:00:01.0/0000:0b:00.0';
  write(sys, `${dev}/numa_node`, '1\n');
  for (const [f, v] of Object.entries({ state: '4: ACTIVE', phys_state: '5: LinkUp', rate: '200 Gb/sec (4X HDR)', link_layer: 'InfiniBand', lid: '0x7' })) {
    write(sys, `${dev}/infiniband/mlx5_0/ports/1/${f}`, `${v}\n`);
  }
  // Port 2 down: the cable is out.
  for (const [f, v] of Object.entries({ state: '1: DOWN', phys_state: '3: Disabled', rate: '10 Gb/sec (4X)', link_layer: 'InfiniBand', lid: '0x0' })) {
    write(sys, `${dev}/infiniband/mlx5_0/ports/2/${f}`, `${v}\n`);
  }
  symlinkSync('../../../0000:0b:00.0', join(sys, dev, 'infiniband/mlx5_0/device'));
  mkdirSync(join(sys, 'class/infiniband'), { recursive: true });
  symlinkSync(`../../${dev}/infiniband/mlx5_0`, join(sys, 'class/infiniband/mlx5_0'));
  mkdirSync(join(sys, 'class/infiniband/mlx5_9')); // no ports directory
  const { hcas, warnings } = await discoverHcas(join(sys, 'class/infiniband'));
  assert.equal(hcas.length, 1);
  assert.is(hcas[0]!.name, 'mlx5_0');
  assert.is(hcas[0]!.numaNode, 1);
  assert.equal(
    hcas[0]!.ports.map((p) => [p.port, p.state, p.physState, p.rateGbps, p.lid]),
    [
      [1, 'ACTIVE', 'LinkUp', 200, 7],
      [2, 'DOWN', 'Disabled', 10, 0],
    ],
  );
  assert.is(warnings.length, 1);
  assert.match(warnings[0]!, /^adapter mlx5_9 under .* has no readable ports directory \(ENOENT\): it is left out/);
});

test.run();
