// The simulated nvidia-smi, through the agent's real discovery: the wrapper a simulated
// node's agent runs, execFile'd as the real binary would be, parsed by the same code.
import { execFile } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { discoverInventory } from '../../src/agent/discovery/index.js';
import { LlmgwError } from '../../src/errors.js';
import { NVIDIA_SMI_SIM, writeNvidiaSmiWrapper } from '../../src/sim/nvidia-smi-wrapper.js';
import { tempDir } from '../agent/discovery/fixtures.js';

const test = suite('simulated nvidia-smi');

const dir = tempDir('llmgw-sim-smi-');
const ibRoot = join(dir, 'infiniband');
mkdirSync(ibRoot);

const run = (args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> =>
  new Promise((resolve) => {
    execFile(process.execPath, [NVIDIA_SMI_SIM, ...args], { env: { ...process.env, ...env } }, (err, stdout, stderr) => resolve({ code: err ? Number(err.code) : 0, stdout, stderr }));
  });

test('discovery finds the node it simulates: N healthy H100s in one NVLink domain, no adapters', async () => {
  const smi = writeNvidiaSmiWrapper(join(dir, 'nvidia-smi-a'), { node: 'node-a', gpus: 6 });
  const inv = await discoverInventory({ nvidiaSmi: smi, ibRoot, noGpu: false });
  assert.equal(
    inv.gpus.map((g) => [g.index, g.name, g.class, g.memoryTotalMiB, g.computeCapability, g.nvlinkDomain, g.problems]),
    [...Array(6).keys()].map((i) => [i, 'NVIDIA H100 80GB HBM3', 'h100-80g', 81559, '9.0', 0, []]),
  );
  assert.equal(inv.nvlinkDomains, [{ id: 0, gpus: [0, 1, 2, 3, 4, 5], minLinks: 18 }]);
  assert.equal(
    inv.gpus.map((g) => g.numaNode),
    [0, 0, 0, 1, 1, 1],
  );
  assert.equal(new Set(inv.gpus.map((g) => g.pciBusId)).size, 6, 'a bus id per card');
  assert.equal([inv.hcas, inv.fabrics, inv.warnings], [[], [], []]);
});

test('UUIDs are stable for a node and distinct across nodes', async () => {
  const a = await discoverInventory({ nvidiaSmi: writeNvidiaSmiWrapper(join(dir, 'nvidia-smi-a'), { node: 'node-a', gpus: 4 }), ibRoot, noGpu: false });
  const again = await discoverInventory({ nvidiaSmi: writeNvidiaSmiWrapper(join(dir, 'nvidia-smi-a2'), { node: 'node-a', gpus: 4 }), ibRoot, noGpu: false });
  const b = await discoverInventory({ nvidiaSmi: writeNvidiaSmiWrapper(join(dir, 'nvidia-smi-b'), { node: "node-'b'", gpus: 4 }), ibRoot, noGpu: false });
  const uuids = (inv: typeof a): (string | null)[] => inv.gpus.map((g) => g.uuid);
  assert.equal(uuids(again), uuids(a));
  assert.equal(new Set([...uuids(a), ...uuids(b)]).size, 8);
  for (const u of uuids(a)) assert.match(u!, /^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
});

test('any other command line exits 2 and says so, as a wrong call to the real one fails', async () => {
  for (const args of [[], ['-L'], ['topo', '-m', '-i', '0'], ['--query-gpu=index,uuid', '--format=csv,noheader,nounits']]) {
    const r = await run(args);
    assert.is(r.code, 2, args.join(' '));
    assert.is(r.stdout, '');
    assert.match(r.stderr, /^simulated nvidia-smi: unexpected arguments: .*only the calls llmgw's discovery makes are answered/);
  }
  const apps = await run(['--query-compute-apps=gpu_uuid,pid,process_name,used_memory', '--format=csv,noheader,nounits']);
  assert.equal([apps.code, apps.stdout], [0, ''], 'no process holds a simulated GPU');
});

test('a bad GPU count is refused, and discovery reports the failure with its reason', async () => {
  for (const n of ['0', '65', 'four', '1.5']) {
    const r = await run(['topo', '-m'], { LLMGW_SIM_GPUS: n });
    assert.is(r.code, 2, n);
    assert.match(r.stderr, new RegExp(`LLMGW_SIM_GPUS must be a whole number from 1 to 64, not '${n}'`));
  }
  const smi = join(dir, 'nvidia-smi-bad');
  writeNvidiaSmiWrapper(smi, { node: 'x', gpus: 0 });
  try {
    await discoverInventory({ nvidiaSmi: smi, ibRoot, noGpu: false });
    assert.unreachable('discovered');
  } catch (err) {
    assert.instance(err, LlmgwError);
    assert.match((err as LlmgwError).message, /exited with status 2: simulated nvidia-smi: LLMGW_SIM_GPUS must be/);
  }
});

test.run();
