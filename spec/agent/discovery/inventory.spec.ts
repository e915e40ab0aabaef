import { test } from '../../support/uvu.js';
import * as assert from 'uvu/assert';
import { discoverInventory, type DiscoverOptions, type Inventory } from '../../../src/agent/discovery/inventory.js';
import { LlmgwError } from '../../../src/errors.js';
import { CASES, ibRootOf, script, smiFailing, smiOf, type Case } from './fixtures.js';

function discover(c: Case, more: Partial<DiscoverOptions> = {}): Promise<Inventory> {
  return discoverInventory({ nvidiaSmi: smiOf(c), ibRoot: ibRootOf(c), noGpu: false, ...more });
}

async function failure(p: Promise<unknown>): Promise<LlmgwError> {
  try {
    await p;
  } catch (err) {
    assert.instance(err, LlmgwError);
    return err as LlmgwError;
  }
  throw new Error('expected discovery to fail');
}

const classes = (inv: Inventory): Array<string | null> => inv.gpus.map((g) => g.class);
const problemsOf = (inv: Inventory): Array<readonly string[]> => inv.gpus.map((g) => g.problems);
const healthy = (n: number): string[][] => Array.from({ length: n }, () => []);

test('every fixture is discovered through its nvidia-smi and sysfs tree', async () => {
  const counts: Record<Case, [number, number]> = {
    'h100-8x': [8, 4],
    'a100-8x': [8, 4],
    'l40s-4x': [4, 1],
    'foreign-process': [8, 0],
    'ecc-fault': [8, 0],
    'na-fields': [4, 0],
    'no-ib': [1, 0],
  };
  for (const c of CASES) {
    const inv = await discover(c);
    assert.equal([inv.gpus.length, inv.hcas.length], counts[c], c);
    assert.equal(
      inv.gpus.map((g) => g.index),
      [...Array(counts[c][0]).keys()],
      c,
    );
  }
});

test('h100-8x: eight healthy h100-80g in one NV18 domain, four NDR adapters', async () => {
  const inv = await discover('h100-8x');
  assert.equal(classes(inv), Array(8).fill('h100-80g'));
  assert.equal(problemsOf(inv), healthy(8));
  assert.equal(inv.nvlinkDomains, [{ id: 0, gpus: [0, 1, 2, 3, 4, 5, 6, 7], minLinks: 18 }]);
  assert.equal(
    inv.gpus.map((g) => g.nvlinkDomain),
    Array(8).fill(0),
  );
  assert.equal(
    inv.gpus.map((g) => g.numaNode),
    [0, 0, 0, 0, 1, 1, 1, 1],
  );
  const g0 = inv.gpus[0]!;
  assert.equal(
    [g0.name, g0.memoryTotalMiB, g0.memoryUsedMiB, g0.computeCapability, g0.pciBusId, g0.driverVersion, g0.temperatureC, g0.eccUncorrected],
    ['NVIDIA H100 80GB HBM3', 81559, 0, '9.0', '00000000:1B:00.0', '590.48.01', 41, 0],
  );
  assert.equal(
    inv.hcas.map((h) => [h.name, h.numaNode, h.fabric, h.ports.map((p) => [p.port, p.state, p.rateGbps, p.linkLayer])]),
    [0, 1, 2, 3].map((j) => [`mlx5_${j}`, j < 2 ? 0 : 1, null, [[1, 'ACTIVE', 400, 'InfiniBand']]]),
  );
  // Unlabelled, the node is an island, and says so.
  assert.equal(inv.fabrics, []);
  assert.is(inv.warnings.length, 1);
  assert.match(inv.warnings[0]!, /^no fabric is labelled/);
});

test('h100-8x with its adapters labelled: attached to the fabric, each HCA carries the label, nothing to warn about', async () => {
  const inv = await discover('h100-8x', { fabrics: { 'ib-a': ['mlx5_0', 'mlx5_1', 'mlx5_2', 'mlx5_3'] } });
  assert.equal(inv.fabrics, [{ name: 'ib-a', hcas: ['mlx5_0', 'mlx5_1', 'mlx5_2', 'mlx5_3'], linkLayer: 'InfiniBand', rateGbps: 400 }]);
  assert.equal(
    inv.hcas.map((h) => h.fabric),
    Array(4).fill('ib-a'),
  );
  assert.equal(inv.warnings, []);
});

test('fabric labels that cannot be right stop discovery: a fabric without HCAs, an HCA on two fabrics', async () => {
  const empty = await failure(discover('h100-8x', { fabrics: { 'ib-a': [] } }));
  assert.is(empty.code, 'LLMGW_CONFIG_INVALID');
  assert.is(empty.message, 'fabric ib-a lists no HCAs: name its adapters (e.g. [mlx5_0, mlx5_1]) or remove it');
  const twice = await failure(discover('h100-8x', { fabrics: { 'ib-a': ['mlx5_0', 'mlx5_1'], 'ib-b': ['mlx5_1', 'mlx5_2', 'mlx5_3'] } }));
  assert.is(twice.code, 'LLMGW_CONFIG_INVALID');
  assert.is(twice.message, 'HCA mlx5_1 is claimed by both ib-a and ib-b: an adapter is cabled to one fabric; fix the label that is wrong');
  assert.equal((twice.details!.problems as Array<{ code: string }>).map((p) => p.code), ['hca-in-two-fabrics']);
});

test('a100-8x: a100-80g in one NV12 domain; the adapter without a subnet manager stays out of the fabric', async () => {
  const inv = await discover('a100-8x', { fabrics: { 'ib-a': ['mlx5_0', 'mlx5_1', 'mlx5_2', 'mlx5_3'] } });
  assert.equal(classes(inv), Array(8).fill('a100-80g'));
  assert.equal(problemsOf(inv), healthy(8));
  assert.equal(inv.nvlinkDomains, [{ id: 0, gpus: [0, 1, 2, 3, 4, 5, 6, 7], minLinks: 12 }]);
  assert.equal(
    inv.gpus.map((g) => g.numaNode),
    [3, 3, 1, 1, 7, 7, 5, 5],
  );
  assert.equal(inv.fabrics, [{ name: 'ib-a', hcas: ['mlx5_0', 'mlx5_1', 'mlx5_2'], linkLayer: 'InfiniBand', rateGbps: 200 }]);
  assert.is(inv.hcas[3]!.fabric, 'ib-a');
  assert.equal(inv.hcas[3]!.ports[0]!.state, 'INIT');
  assert.is(inv.warnings.length, 1);
  assert.match(inv.warnings[0]!, /^mlx5_3 \(fabric ib-a\) has no ACTIVE port/);
});

test('l40s-4x: l40s-45g with no NVLink domain, and a RoCE adapter', async () => {
  const inv = await discover('l40s-4x', { fabrics: { 'roce-a': ['mlx5_0'] } });
  assert.equal(classes(inv), Array(4).fill('l40s-45g'));
  assert.equal(problemsOf(inv), healthy(4));
  assert.equal(inv.nvlinkDomains, []);
  assert.equal(
    inv.gpus.map((g) => g.nvlinkDomain),
    [null, null, null, null],
  );
  assert.equal(inv.hcas[0]!.ports, [{ port: 1, state: 'ACTIVE', physState: 'LinkUp', rateGbps: 100, linkLayer: 'Ethernet', lid: 0 }]);
  assert.equal(inv.fabrics, [{ name: 'roce-a', hcas: ['mlx5_0'], linkLayer: 'Ethernet', rateGbps: 100 }]);
});

test('foreign-process: only the card with the processes is kept out, and our own engines do not count', async () => {
  const inv = await discover('foreign-process');
  assert.equal(
    inv.gpus.map((g) => g.problems.length),
    [0, 0, 0, 3, 0, 0, 0, 0],
  );
  assert.match(inv.gpus[3]!.problems[2]!, /^GPU 3 is used by pid 11345 \(\.\/gpu_burn, 15690 MiB\), which llmgw did not start/);
  const partly = await discover('foreign-process', { ours: new Set([11345]) });
  assert.equal(
    partly.gpus[3]!.problems.map((p) => /pid (\d+)/.exec(p)![1]),
    ['11327', '11328'],
  );
  const ours = await discover('foreign-process', { ours: new Set([11327, 11328, 11345]) });
  assert.equal(problemsOf(ours), healthy(8));
  assert.is(ours.gpus[3]!.memoryUsedMiB, 19813);
});

test('ecc-fault: the card with uncorrected ECC errors is kept out, its class unchanged', async () => {
  const inv = await discover('ecc-fault');
  assert.equal(
    inv.gpus.map((g) => g.eccUncorrected),
    [0, 0, 0, 0, 0, 2, 0, 0],
  );
  assert.equal(inv.gpus[5]!.problems, [
    'GPU 5 has 2 uncorrected ECC errors since the driver loaded: drain it, reset it (nvidia-smi -r -i 5), and replace the card if they come back',
  ]);
  assert.equal(
    inv.gpus.filter((g) => g.problems.length > 0).map((g) => g.index),
    [5],
  );
  assert.is(inv.gpus[5]!.class, 'a100-80g');
});

test('na-fields: unavailable values are null; only the card without a size, hence without a class, has a problem', async () => {
  const inv = await discover('na-fields');
  assert.equal(
    inv.gpus.map((g) => [g.memoryTotalMiB, g.memoryUsedMiB, g.computeCapability, g.pciBusId, g.driverVersion, g.temperatureC, g.eccUncorrected]),
    [
      [46068, 0, '8.9', '00000000:01:00.0', '595.80', 63, null],
      [46068, null, '8.9', '00000000:25:00.0', '595.80', null, null],
      [46068, 0, null, '00000000:81:00.0', null, null, 0],
      [null, 0, '8.9', null, '595.80', 60, 0],
    ],
  );
  assert.equal(classes(inv), ['l40s-45g', 'l40s-45g', 'l40s-45g', null]);
  assert.equal(problemsOf(inv), [
    [],
    [],
    [],
    ["GPU 3 has no class (nvidia-smi gives no memory.total): set one for it in the agent config's class overrides, by index or name"],
  ]);
});

test('class overrides: by index fixes the card without a size; by name applies to every card of that name', async () => {
  const byIndex = await discover('na-fields', { classOverrides: { '3': 'l40s-45g' } });
  assert.equal(classes(byIndex), Array(4).fill('l40s-45g'));
  assert.equal(problemsOf(byIndex), healthy(4));
  const byName = await discover('l40s-4x', { classOverrides: { 'NVIDIA L40S': 'l40s-48g' } });
  assert.equal(classes(byName), Array(4).fill('l40s-48g'));
  const unmatched = await discover('no-ib', { classOverrides: { '7': 'h100-80g' } });
  assert.equal(unmatched.warnings, ['the class override for "7" matches no GPU on this node (keys are a GPU index, UUID or name): remove it or fix the key']);
  const bad = await failure(discover('no-ib', { classOverrides: { '0': 'H100 80GB' } }));
  assert.is(bad.code, 'LLMGW_CONFIG_INVALID');
});

test('no-ib: the captured single-H100 VM has no adapters and nothing to warn about', async () => {
  const inv = await discover('no-ib');
  assert.equal(classes(inv), ['h100-80g']);
  assert.equal(inv.hcas, []);
  assert.equal(inv.fabrics, []);
  assert.equal(inv.nvlinkDomains, []);
  assert.equal(inv.warnings, []);
  assert.is(inv.gpus[0]!.nvlinkDomain, null);
  assert.is(inv.gpus[0]!.uuid, 'GPU-00000000-0000-0000-0000-000000000000');
});

test('--no-gpu runs no nvidia-smi at all and still reads the adapters', async () => {
  const inv = await discoverInventory({ nvidiaSmi: '/nonexistent/nvidia-smi', ibRoot: ibRootOf('h100-8x'), noGpu: true });
  assert.equal(inv.gpus, []);
  assert.equal(inv.nvlinkDomains, []);
  assert.is(inv.hcas.length, 4);
});

test('a node meant to have GPUs fails discovery when nvidia-smi is missing, rather than reporting none', async () => {
  const e = await failure(discoverInventory({ nvidiaSmi: '/nonexistent/nvidia-smi', ibRoot: ibRootOf('no-ib'), noGpu: false }));
  assert.is(e.code, 'LLMGW_DISCOVERY_FAILED');
  assert.match(e.message, /^nvidia-smi not found at \/nonexistent\/nvidia-smi: pass --no-gpu on a node without GPUs/);
});

test('an nvidia-smi that lists no GPU fails discovery too', async () => {
  const e = await failure(discoverInventory({ nvidiaSmi: script('exit 0'), ibRoot: ibRootOf('no-ib'), noGpu: false }));
  assert.is(e.code, 'LLMGW_DISCOVERY_FAILED');
  assert.match(e.message, /lists no GPUs: pass --no-gpu on a node without GPUs/);
});

test('a failing topo -m loses only the NVLink domains, with a warning', async () => {
  const smi = smiFailing('h100-8x', 'topo', 'echo "topo: not supported on this system" >&2; exit 3');
  const inv = await discoverInventory({ nvidiaSmi: smi, ibRoot: ibRootOf('no-ib'), noGpu: false });
  assert.equal(classes(inv), Array(8).fill('h100-80g'));
  assert.equal(problemsOf(inv), healthy(8));
  assert.equal(inv.nvlinkDomains, []);
  assert.equal(
    inv.gpus.map((g) => g.nvlinkDomain),
    Array(8).fill(null),
  );
  assert.is(inv.warnings.length, 1);
  assert.match(inv.warnings[0]!, /^NVLink domains are unknown: .* exited with status 3: topo: not supported on this system; tensor-parallel groups will not be kept inside one$/);
});

test('a failing process listing keeps every card out, since none can be shown free', async () => {
  const smi = smiFailing('h100-8x', '--query-compute-apps', 'exit 4');
  const inv = await discoverInventory({ nvidiaSmi: smi, ibRoot: ibRootOf('no-ib'), noGpu: false });
  assert.ok(inv.gpus.every((g) => g.problems.length === 1 && /could not be listed \(.*exited with status 4\)/.test(g.problems[0]!)));
});

test('a topo -m that disagrees with the GPU list is pointed out', async () => {
  // Eight GPUs listed, the 4-GPU L40S matrix printed.
  const smi = smiFailing('h100-8x', 'topo', `exec cat '${ibRootOf('l40s-4x').replace(/sys$/, 'topo-m.txt')}'`);
  const inv = await discoverInventory({ nvidiaSmi: smi, ibRoot: ibRootOf('no-ib'), noGpu: false });
  assert.ok(inv.warnings.some((w) => /topo -m shows GPUs 0, 1, 2, 3 but --query-gpu lists 0, 1, 2, 3, 4, 5, 6, 7: a GPU may have fallen off the bus/.test(w)));
});

test.run();
