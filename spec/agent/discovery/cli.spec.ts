import { test } from '../../support/uvu.js';
import * as assert from 'uvu/assert';
import { AgentInventoryCommand, parseFabricFlags } from '../../../src/cli/commands/agent-inventory.js';
import { runCli, runInProcess } from '../../support/cli.js';
import { ibRootOf, smiOf, type Case } from './fixtures.js';

/** The command in-process, for the table (no process start needed). */
const inProcess = (argv: string[]) => runInProcess([AgentInventoryCommand], argv);

const on = (c: Case): string[] => ['--nvidia-smi', smiOf(c), '--ib-root', ibRootOf(c)];

interface JsonInventory {
  gpus: Array<{ index: number; name: string; class: string; memoryTotalMiB: number; computeCapability: string; problems: string[] }>;
  hcas: Array<{ name: string; ports: Array<{ state: string; rateGbps: number; linkLayer: string }> }>;
}

test('end to end: llmgw agent inventory --json on the H100 node', async () => {
  const r = await runCli(['agent', 'inventory', '--json', ...on('h100-8x')]);
  assert.is(r.stderr, '');
  assert.is(r.code, 0);
  const inv = JSON.parse(r.stdout) as JsonInventory;
  assert.equal(
    inv.gpus.map((g) => [g.index, g.name, g.class, g.memoryTotalMiB, g.computeCapability, g.problems]),
    [...Array(8).keys()].map((i) => [i, 'NVIDIA H100 80GB HBM3', 'h100-80g', 81559, '9.0', []]),
  );
  assert.equal(
    inv.hcas.map((h) => [h.name, h.ports.map((p) => [p.state, p.rateGbps, p.linkLayer])]),
    [0, 1, 2, 3].map((j) => [`mlx5_${j}`, [['ACTIVE', 400, 'InfiniBand']]]),
  );
});

test('end to end: the foreign process shows as GPU 3 problems; RoCE as Ethernet', async () => {
  const fp = JSON.parse((await runCli(['agent', 'inventory', '--json', ...on('foreign-process')])).stdout) as JsonInventory;
  assert.equal(
    fp.gpus.map((g) => g.problems.length),
    [0, 0, 0, 3, 0, 0, 0, 0],
  );
  assert.equal(fp.hcas, []);
  const l40s = JSON.parse((await runCli(['agent', 'inventory', '--json', ...on('l40s-4x')])).stdout) as JsonInventory;
  assert.equal(l40s.hcas[0]!.ports[0]!.linkLayer, 'Ethernet');
  assert.equal(
    l40s.gpus.map((g) => g.class),
    Array(4).fill('l40s-45g'),
  );
});

test('end to end: a missing nvidia-smi exits 1 and says to pass --no-gpu; --no-gpu then works', async () => {
  const missing = await runCli(['agent', 'inventory', '--json', '--nvidia-smi', '/nonexistent/nvidia-smi', '--ib-root', ibRootOf('no-ib')]);
  assert.is(missing.code, 1);
  assert.is(missing.stdout, '');
  assert.is(missing.stderr, 'llmgw agent inventory: nvidia-smi not found at /nonexistent/nvidia-smi: pass --no-gpu on a node without GPUs, or --nvidia-smi with its path\n');
  const noGpu = await runCli(['agent', 'inventory', '--json', '--no-gpu', '--nvidia-smi', '/nonexistent/nvidia-smi', '--ib-root', ibRootOf('no-ib')]);
  assert.is(noGpu.code, 0);
  assert.equal(JSON.parse(noGpu.stdout), { gpus: [], hcas: [], nvlinkDomains: [], fabrics: [], warnings: [] });
});

test('end to end: an --ib-root that does not exist is an error, not a node without adapters', async () => {
  const r = await runCli(['agent', 'inventory', '--no-gpu', '--ib-root', '/nonexistent/sys/class/infiniband']);
  assert.is(r.code, 1);
  assert.is(r.stderr, 'llmgw agent inventory: InfiniBand root /nonexistent/sys/class/infiniband does not exist: check --ib-root (normally /sys/class/infiniband; an empty directory means no adapters)\n');
});

test('the table: GPUs, then adapters and ports, then problems, then warnings', async () => {
  const r = await inProcess(['agent', 'inventory', ...on('foreign-process')]);
  assert.is(r.code, 0);
  const out = r.stdout;
  const at = (s: string): number => {
    const i = out.indexOf(s);
    assert.ok(i >= 0, `${JSON.stringify(s)} not in:\n${out}`);
    return i;
  };
  assert.ok(at('GPUs (8)') < at('HCAs (0)') && at('HCAs (0)') < at('Problems (3)'));
  assert.match(out, /\n {2}IDX +CLASS +NAME +MEMORY +USED +CC +TEMP +ECC +NVLINK +BUS +HEALTH\n/);
  assert.match(out, /\n {2}3 +h100-80g +NVIDIA H100 80GB HBM3 +81559 MiB +19813 MiB +9\.0 +42C +0 +0 +00000000:61:00\.0 +3 problems\n/);
  assert.match(out, /\n {2}0 +h100-80g .* ok\n/);
  assert.match(out, /NVLink domains: 0: GPUs 0-7 \(NV18\)\n/);
  assert.match(out, /none: this node is a single-node island/);
  assert.match(out, /\n {2}GPU 3 is used by pid 11345 \(\.\/gpu_burn, 15690 MiB\), which llmgw did not start/);
  assert.not.match(out, /Warnings/);
});

test('the table shows each port with its state, rate, link layer, LID and fabric', async () => {
  const r = await inProcess(['agent', 'inventory', ...on('a100-8x'), '--fabric', 'ib-a=mlx5_0,mlx5_1,mlx5_2,mlx5_3']);
  assert.is(r.code, 0);
  assert.match(r.stdout, /\n {2}mlx5_0 +1 +ACTIVE +LinkUp +200 Gb\/s +InfiniBand +0x5 +3 +ib-a\n/);
  assert.match(r.stdout, /\n {2}mlx5_3 +1 +INIT +LinkUp +200 Gb\/s +InfiniBand +0x0 +5 +ib-a\n/);
  assert.match(r.stdout, /Fabrics: ib-a \(InfiniBand, 200 Gb\/s\): mlx5_0, mlx5_1, mlx5_2\n/);
  assert.match(r.stdout, /Problems \(0\)\n {2}none\n/);
  assert.match(r.stdout, /Warnings \(1\)\n {2}mlx5_3 \(fabric ib-a\) has no ACTIVE port/);
  const roce = await inProcess(['agent', 'inventory', ...on('l40s-4x')]);
  assert.match(roce.stdout, /\n {2}mlx5_0 +1 +ACTIVE +LinkUp +100 Gb\/s +Ethernet \(RoCE\) +0x0 +0 +-\n/);
  assert.match(roce.stdout, /NVLink domains: none\n/);
});

test('--fabric labels are checked as the agent config would be, and wrong ones exit 1', async () => {
  const twice = await inProcess(['agent', 'inventory', ...on('h100-8x'), '--fabric', 'ib-a=mlx5_0,mlx5_1', '--fabric', 'ib-b=mlx5_1']);
  assert.is(twice.code, 1);
  assert.is(twice.stdout, '');
  assert.is(twice.stderr, 'llmgw agent inventory: HCA mlx5_1 is claimed by both ib-a and ib-b: an adapter is cabled to one fabric; fix the label that is wrong\n');
  const empty = await inProcess(['agent', 'inventory', ...on('h100-8x'), '--fabric', 'ib-a=']);
  assert.is(empty.code, 1);
  assert.match(empty.stderr, /fabric ib-a lists no HCAs/);
  const malformed = await inProcess(['agent', 'inventory', ...on('h100-8x'), '--fabric', 'mlx5_0']);
  assert.is(malformed.code, 1);
  assert.match(malformed.stderr, /--fabric "mlx5_0": expected NAME=HCA\[,HCA…\]/);
  assert.equal(parseFabricFlags(['ib-a=mlx5_0, mlx5_1', 'ib-b=mlx5_2']), { 'ib-a': ['mlx5_0', 'mlx5_1'], 'ib-b': ['mlx5_2'] });
  assert.is(parseFabricFlags([]), undefined);
});

test('--no-gpu in the table says the GPUs were not looked at', async () => {
  const r = await inProcess(['agent', 'inventory', '--no-gpu', '--ib-root', ibRootOf('h100-8x')]);
  assert.is(r.code, 0);
  assert.match(r.stdout, /^GPUs: not discovered \(--no-gpu\)\n\nHCAs \(4\)\n/);
  assert.match(r.stdout, /Warnings \(1\)\n {2}no fabric is labelled/);
});

test.run();
