import { chmodSync } from 'node:fs';
import { test } from '../../support/uvu.js';
import * as assert from 'uvu/assert';
import {
  COMPUTE_APPS_ARGS,
  GPU_QUERY_ARGS,
  isUnavailable,
  nvlinkDomains,
  parseComputeApps,
  parseGpuQuery,
  parseTopology,
  runNvidiaSmi,
} from '../../../src/agent/discovery/nvidia-smi.js';
import { LlmgwError } from '../../../src/errors.js';
import { readFixture, script, smiOf } from './fixtures.js';

async function rejection(p: Promise<unknown>): Promise<LlmgwError> {
  try {
    await p;
  } catch (err) {
    assert.instance(err, LlmgwError);
    return err as LlmgwError;
  }
  throw new Error('expected a rejection, got a result');
}

function thrown(fn: () => unknown): LlmgwError {
  try {
    fn();
  } catch (err) {
    assert.instance(err, LlmgwError);
    return err as LlmgwError;
  }
  throw new Error('expected a throw');
}

// The three lines engines.md §6 quotes from real captures.
const H100 = '0, GPU-00000000-0000-0000-0000-000000000000, NVIDIA H100 80GB HBM3, 81559, 0, 9.0, 00000000:00:09.0, 590.48.01, 41, 0';
const A100 = '0, GPU-31515c3d-1414-7c2c-004a-f86a898946ac, NVIDIA A100-SXM4-80GB, 81920, 1, 8.0, 00000000:68:00.0, 555.42.02, 25, 0';
const L40S = '0, GPU-00000000-0000-0000-0000-000000000000, NVIDIA L40S, 46068, 0, 8.9, 00000000:01:00.0, 595.80, 63, 0';

test('the query asks for exactly the ten fields, without header or units', () => {
  assert.equal(GPU_QUERY_ARGS, [
    '--query-gpu=index,uuid,name,memory.total,memory.used,compute_cap,pci.bus_id,driver_version,temperature.gpu,ecc.errors.uncorrected.volatile.total',
    '--format=csv,noheader,nounits',
  ]);
  assert.equal(COMPUTE_APPS_ARGS, ['--query-compute-apps=gpu_uuid,pid,process_name,used_memory', '--format=csv,noheader,nounits']);
});

test('captured --query-gpu lines parse field by field', () => {
  const [h, a, l] = parseGpuQuery(`${H100}\n${A100}\n${L40S}\n`);
  assert.equal(h, {
    index: 0,
    uuid: 'GPU-00000000-0000-0000-0000-000000000000',
    name: 'NVIDIA H100 80GB HBM3',
    memoryTotalMiB: 81559,
    memoryUsedMiB: 0,
    computeCapability: '9.0',
    pciBusId: '00000000:00:09.0',
    driverVersion: '590.48.01',
    temperatureC: 41,
    eccUncorrected: 0,
    deviceError: null,
  });
  assert.is(a!.uuid, 'GPU-31515c3d-1414-7c2c-004a-f86a898946ac');
  assert.is(a!.name, 'NVIDIA A100-SXM4-80GB');
  assert.is(a!.memoryUsedMiB, 1);
  assert.is(a!.computeCapability, '8.0');
  assert.is(l!.memoryTotalMiB, 46068);
  assert.is(l!.driverVersion, '595.80');
  assert.is(l!.temperatureC, 63);
});

test('every unavailable marker nvidia-smi prints is null, not 0 and not an error', () => {
  for (const v of ['[N/A]', '[Not Supported]', '[Unknown Error]', '[Requested functionality has been deprecated]', 'N/A', '', '  ', '[Insufficient Permissions]']) {
    assert.ok(isUnavailable(v), JSON.stringify(v));
  }
  for (const v of ['0', '81559', 'NVIDIA L40S', '9.0']) assert.not.ok(isUnavailable(v), v);
  const [g] = parseGpuQuery(readFixture('na-fields', 'query-gpu.csv'));
  assert.is(g!.eccUncorrected, null);
  const all = parseGpuQuery(readFixture('na-fields', 'query-gpu.csv'));
  assert.equal(
    all.map((x) => [x.memoryTotalMiB, x.memoryUsedMiB, x.computeCapability, x.pciBusId, x.driverVersion, x.temperatureC, x.eccUncorrected]),
    [
      [46068, 0, '8.9', '00000000:01:00.0', '595.80', 63, null],
      [46068, null, '8.9', '00000000:25:00.0', '595.80', null, null],
      [46068, 0, null, '00000000:81:00.0', null, null, 0],
      [null, 0, '8.9', null, '595.80', 60, 0],
    ],
  );
});

test('a name holding a comma is put back together', () => {
  const [g] = parseGpuQuery('3, GPU-abc, NVIDIA Some Card, Rev 2, 24564, 0, 8.9, 00000000:01:00.0, 550.54.15, 45, 0\n');
  assert.is(g!.name, 'NVIDIA Some Card, Rev 2');
  assert.is(g!.index, 3);
  assert.is(g!.memoryTotalMiB, 24564);
  assert.is(g!.eccUncorrected, 0);
});

test('a GPU nvidia-smi reports as lost or needing a reset carries that as a device error', () => {
  const [g] = parseGpuQuery('2, GPU-abc, NVIDIA H100 80GB HBM3, [GPU requires reset], [GPU requires reset], 9.0, 00000000:52:00.0, 590.48.01, [GPU requires reset], [GPU requires reset]\n');
  assert.is(g!.deviceError, '[GPU requires reset]');
  assert.is(g!.memoryTotalMiB, null);
});

test('output that is not a GPU row is an error naming the line, not a GPU skipped in silence', () => {
  const short = thrown(() => parseGpuQuery(`${H100}\nNVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n`));
  assert.is(short.code, 'LLMGW_DISCOVERY_FAILED');
  assert.match(short.message, /1 fields where 10 were asked for, in line "NVIDIA-SMI has failed/);
  const garbage = thrown(() => parseGpuQuery(H100.replace('81559', 'lots')));
  assert.match(garbage.message, /memory\.total is "lots", not a number/);
  const index = thrown(() => parseGpuQuery(H100.replace(/^0/, 'GPU0')));
  assert.match(index.message, /index is "GPU0"/);
});

test('compute apps: empty output is no process; captured rows parse; memory may be unavailable', () => {
  assert.equal(parseComputeApps(''), []);
  assert.equal(parseComputeApps('\n'), []);
  assert.equal(parseComputeApps('No running processes found\n'), []);
  const apps = parseComputeApps(readFixture('foreign-process', 'query-compute-apps.csv'));
  assert.equal(
    apps.map((a) => [a.pid, a.processName, a.usedMemoryMiB]),
    [
      [11327, '/root/tools/memhog', 2566],
      [11328, '/root/tools/memhog', 1542],
      [11345, './gpu_burn', 15690],
    ],
  );
  assert.ok(apps.every((a) => a.gpuUuid === apps[0]!.gpuUuid && a.gpuUuid.startsWith('GPU-')));
  assert.equal(parseComputeApps('GPU-abc, 42, python3, [N/A]\n')[0]!.usedMemoryMiB, null);
  assert.is(thrown(() => parseComputeApps('GPU-abc, python3\n')).code, 'LLMGW_DISCOVERY_FAILED');
});

test('topo -m of the H100 node: devices, NV18 matrix, NICs and their legend, GPU NUMA nodes', () => {
  const t = parseTopology(readFixture('h100-8x', 'topo-m.txt'));
  assert.equal(t.devices, ['GPU0', 'GPU1', 'GPU2', 'GPU3', 'GPU4', 'GPU5', 'GPU6', 'GPU7', 'NIC0', 'NIC1', 'NIC2', 'NIC3']);
  assert.equal(t.gpus, [0, 1, 2, 3, 4, 5, 6, 7]);
  assert.is(t.matrix.GPU0!.GPU0, 'X');
  assert.is(t.matrix.GPU0!.GPU7, 'NV18');
  assert.is(t.matrix.GPU0!.NIC0, 'PXB');
  assert.is(t.matrix.GPU0!.NIC2, 'SYS');
  assert.is(t.matrix.NIC3!.GPU7, 'PXB');
  assert.equal(t.nicLegend, { NIC0: 'mlx5_0', NIC1: 'mlx5_1', NIC2: 'mlx5_2', NIC3: 'mlx5_3' });
  assert.equal(t.gpuNumaNode, { 0: 0, 1: 0, 2: 0, 3: 0, 4: 1, 5: 1, 6: 1, 7: 1 });
  assert.equal(nvlinkDomains(t), [{ id: 0, gpus: [0, 1, 2, 3, 4, 5, 6, 7], minLinks: 18 }]);
});

test('topo -m of the A100 node: the older layout without a GPU NUMA ID column, NV12', () => {
  const t = parseTopology(readFixture('a100-8x', 'topo-m.txt'));
  assert.equal(t.gpuNumaNode, { 0: 3, 1: 3, 2: 1, 3: 1, 4: 7, 5: 7, 6: 5, 7: 5 });
  assert.equal(nvlinkDomains(t), [{ id: 0, gpus: [0, 1, 2, 3, 4, 5, 6, 7], minLinks: 12 }]);
});

test('topo -m of the L40S node: PIX, NODE and SYS make no NVLink domain', () => {
  const t = parseTopology(readFixture('l40s-4x', 'topo-m.txt'));
  assert.equal(t.gpus, [0, 1, 2, 3]);
  assert.equal([t.matrix.GPU0!.GPU1, t.matrix.GPU0!.GPU2, t.matrix.GPU0!.NIC0], ['PIX', 'SYS', 'NODE']);
  assert.equal(t.nicLegend, { NIC0: 'mlx5_0' });
  assert.equal(nvlinkDomains(t), []);
});

test('topo -m of the captured single-GPU VM parses, with no domain', () => {
  const t = parseTopology(readFixture('no-ib', 'topo-m.txt'));
  assert.equal(t.devices, ['GPU0']);
  assert.equal(t.gpuNumaNode, { 0: 0 });
  assert.equal(t.nicLegend, {});
  assert.equal(nvlinkDomains(t), []);
});

test('topo -m with an ANSI-underlined header, or with its tabs turned to spaces, parses the same', () => {
  const text = readFixture('h100-8x', 'topo-m.txt');
  const [header, ...rest] = text.split('\n');
  const underlined = `\t\x1b[4m${header!.slice(1)}\x1b[0m\n${rest.join('\n')}`;
  assert.equal(parseTopology(underlined), parseTopology(text));
  const spaced = parseTopology(text.replace(/\t/g, '    '));
  assert.equal(spaced.matrix, parseTopology(text).matrix);
  assert.equal(nvlinkDomains(spaced), nvlinkDomains(parseTopology(text)));
});

const matrix = (rows: string[][]): string =>
  `\t${rows.map((_, i) => `GPU${i}`).join('\t')}\tCPU Affinity\tNUMA Affinity\n` + rows.map((r, i) => `GPU${i}\t${r.join('\t')}\t0-7\t0\n`).join('') + '\n';

test('NV-bridged pairs make one domain per pair; a chain of NVLinks makes one domain with its weakest link', () => {
  const pairs = matrix([
    [' X ', 'NV12', 'SYS', 'SYS'],
    ['NV12', ' X ', 'SYS', 'SYS'],
    ['SYS', 'SYS', ' X ', 'NV12'],
    ['SYS', 'SYS', 'NV12', ' X '],
  ]);
  assert.equal(nvlinkDomains(parseTopology(pairs)), [
    { id: 0, gpus: [0, 1], minLinks: 12 },
    { id: 1, gpus: [2, 3], minLinks: 12 },
  ]);
  const chain = matrix([
    [' X ', 'NV4', 'PHB'],
    ['NV4', ' X ', 'NV2'],
    ['PHB', 'NV2', ' X '],
  ]);
  assert.equal(nvlinkDomains(parseTopology(chain)), [{ id: 0, gpus: [0, 1, 2], minLinks: 2 }]);
});

test('a topo -m without a header, or with a short row, is an error', () => {
  assert.is(thrown(() => parseTopology('GPU topology is not supported\n')).code, 'LLMGW_DISCOVERY_FAILED');
  const short = readFixture('l40s-4x', 'topo-m.txt').replace('GPU3\tSYS\tSYS\tPIX\t X \tSYS', 'GPU3\tSYS');
  assert.match(thrown(() => parseTopology(short)).message, /row GPU3 has "32-63,96-127" where the link to GPU1 should be/);
});

test('runNvidiaSmi runs the binary with the arguments and returns stdout', async () => {
  const out = await runNvidiaSmi(smiOf('h100-8x'), GPU_QUERY_ARGS);
  assert.is(out, readFixture('h100-8x', 'query-gpu.csv'));
  // The fixture refuses any other command line, so the above proves the arguments too.
  const wrong = await rejection(runNvidiaSmi(smiOf('h100-8x'), ['--query-gpu=index', '--format=csv']));
  assert.match(wrong.message, /exited with status 2: fixture nvidia-smi: unexpected arguments/);
});

test('a missing nvidia-smi says where it looked and to pass --no-gpu', async () => {
  const e = await rejection(runNvidiaSmi('/nonexistent/bin/nvidia-smi', GPU_QUERY_ARGS));
  assert.is(e.code, 'LLMGW_DISCOVERY_FAILED');
  assert.is(e.message, 'nvidia-smi not found at /nonexistent/bin/nvidia-smi: pass --no-gpu on a node without GPUs, or --nvidia-smi with its path');
  const onPath = await rejection(runNvidiaSmi('nvidia-smi-that-is-not-installed', GPU_QUERY_ARGS));
  assert.match(onPath.message, /^nvidia-smi not found on PATH \(as nvidia-smi-that-is-not-installed\): pass --no-gpu/);
});

test('a failing nvidia-smi reports its exit status and what it printed', async () => {
  const stub = script(`echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running."\nexit 9`);
  const e = await rejection(runNvidiaSmi(stub, GPU_QUERY_ARGS));
  assert.is(e.code, 'LLMGW_DISCOVERY_FAILED');
  assert.match(e.message, /exited with status 9: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver/);
});

test('a hung nvidia-smi is killed at the timeout', async () => {
  const stub = script('exec sleep 30');
  const started = Date.now();
  const e = await rejection(runNvidiaSmi(stub, GPU_QUERY_ARGS, 300));
  assert.ok(Date.now() - started < 10_000);
  assert.match(e.message, /did not finish within 300 ms: the driver may be hung/);
});

test('an nvidia-smi that is not executable says so', async () => {
  const stub = script('exit 0');
  chmodSync(stub, 0o644);
  const e = await rejection(runNvidiaSmi(stub, GPU_QUERY_ARGS));
  assert.match(e.message, /is not executable/);
});

test.run();
