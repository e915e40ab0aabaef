// What a simulated GPU node's nvidia-smi prints: N H100s in one NVLink domain, in the
// formats of the captured outputs in spec/fixtures/hardware/h100-8x. Only the three
// calls llmgw's discovery makes are answered; anything else is refused, so a changed
// command line fails instead of meeting a stand-in that answers everything.
import { createHash } from 'node:crypto';

// Written out, not imported from the agent (the sim imports nothing of it), as the
// fixture nvidia-smi scripts do; spec/sim/nvidia-smi runs the agent's discovery against
// them, which is what proves they agree.
const GPU_QUERY_ARGS = ['--query-gpu=index,uuid,name,memory.total,memory.used,compute_cap,pci.bus_id,driver_version,temperature.gpu,ecc.errors.uncorrected.volatile.total', '--format=csv,noheader,nounits'];
const COMPUTE_APPS_ARGS = ['--query-compute-apps=gpu_uuid,pid,process_name,used_memory', '--format=csv,noheader,nounits'];
const TOPOLOGY_ARGS = ['topo', '-m'];

export interface SimNode {
  /** Seeds the UUIDs: two nodes never report the same GPU. */
  readonly node: string;
  readonly gpus: number;
}

export interface SmiAnswer {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Most GPUs a node may simulate: as many as any real node holds, with room. */
export const MAX_SIM_GPUS = 64;

// The captured H100 line's values (81559 MiB, compute 9.0, driver 590.48.01).
const NAME = 'NVIDIA H100 80GB HBM3';
const MEMORY_MIB = 81_559;
const DRIVER = '590.48.01';

const same = (a: readonly string[], b: readonly string[]): boolean => a.length === b.length && a.every((x, i) => x === b[i]);

export function answer(argv: readonly string[], sim: SimNode): SmiAnswer {
  if (same(argv, GPU_QUERY_ARGS)) return { code: 0, stdout: gpuQuery(sim), stderr: '' };
  // No process holds a simulated GPU: the sim engines use none.
  if (same(argv, COMPUTE_APPS_ARGS)) return { code: 0, stdout: '', stderr: '' };
  if (same(argv, TOPOLOGY_ARGS)) return { code: 0, stdout: topology(sim.gpus), stderr: '' };
  return { code: 2, stdout: '', stderr: `simulated nvidia-smi: unexpected arguments: ${argv.join(' ')} (only the calls llmgw's discovery makes are answered)\n` };
}

/** A UUID as nvidia-smi prints it, stable for a node name and index. */
export function gpuUuid(node: string, index: number): string {
  const h = createHash('sha256').update(`${node}/${index}`).digest('hex');
  return `GPU-${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

function gpuQuery(sim: SimNode): string {
  let out = '';
  for (let i = 0; i < sim.gpus; i++) {
    const bus = `00000000:${(0x10 + i * 3).toString(16).toUpperCase().padStart(2, '0')}:00.0`;
    out += `${i}, ${gpuUuid(sim.node, i)}, ${NAME}, ${MEMORY_MIB}, 0, 9.0, ${bus}, ${DRIVER}, 40, 0\n`;
  }
  return out;
}

/** `topo -m` of an all-to-all NVLink node, the first half of the GPUs on NUMA node 0. */
function topology(n: number): string {
  const gpus = Array.from({ length: n }, (_, i) => `GPU${i}`);
  const half = Math.ceil(n / 2);
  const rows = gpus.map((g, i) => {
    const links = gpus.map((_, j) => (i === j ? ' X ' : 'NV18'));
    const numa = i < half ? 0 : 1;
    return [g, ...links, numa === 0 ? '0-55,112-167' : '56-111,168-223', String(numa), '', 'N/A'].join('\t');
  });
  return [['', ...gpus, 'CPU Affinity', 'NUMA Affinity', 'GPU NUMA ID'].join('\t'), ...rows, '', LEGEND].join('\n');
}

const LEGEND = `Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks
`;
