import { Command, Option } from 'clipanion';
import { LlmgwError } from '../../errors.js';
import { DEFAULT_NVIDIA_SMI, FLAG_KNOBS, SYSFS_INFINIBAND, checkIbRoot, discoverInventory, type FabricConfig, type Inventory } from '../../agent/discovery/index.js';

/** `llmgw agent inventory`: what the scheduler would see on this node. */
export class AgentInventoryCommand extends Command {
  static override paths = [['agent', 'inventory']];
  static override usage = Command.Usage({
    category: 'Agent',
    description: "Show this node's GPUs and InfiniBand adapters as the scheduler would see them",
    details: `
      Runs the agent's discovery once and prints the GPUs (class, memory, compute capability, NVLink domain, health), then the InfiniBand/RoCE adapters and their ports, then every problem that keeps a GPU out of placement and every warning.

      Run it before adding a node: it is the quickest way to find a card another process is using, a card with ECC errors, or a port with no subnet manager. This command starts no engine, so every compute process on a card is reported as foreign.

      \`--fabric NAME=HCA,HCA\` (repeatable) checks fabric labels the way the agent config would. Exits 1, with the reason on stderr, when discovery fails or the labels are invalid.
    `,
    examples: [
      ['Table', 'llmgw agent inventory'],
      ['JSON', 'llmgw agent inventory --json'],
      ['A node without GPUs', 'llmgw agent inventory --no-gpu'],
      ['Check fabric labels', 'llmgw agent inventory --fabric ib-a=mlx5_0,mlx5_1,mlx5_2,mlx5_3'],
    ],
  });

  json = Option.Boolean('--json', false, { description: 'print JSON instead of a table' });
  nvidiaSmi = Option.String('--nvidia-smi', DEFAULT_NVIDIA_SMI, { description: 'path to nvidia-smi (default: looked up on PATH)' });
  ibRoot = Option.String('--ib-root', SYSFS_INFINIBAND, { description: `sysfs InfiniBand directory (default ${SYSFS_INFINIBAND})` });
  noGpu = Option.Boolean('--no-gpu', false, { description: 'skip GPU discovery, on a node without GPUs (nvidia-smi is then not run)' });
  fabric = Option.Array('--fabric', [], { description: 'label a fabric: NAME=HCA[,HCA…] (repeatable)' });

  override async execute(): Promise<number> {
    let fabrics: FabricConfig | undefined;
    try {
      fabrics = parseFabricFlags(this.fabric ?? []);
    } catch (err) {
      this.context.stderr.write(`llmgw agent inventory: ${LlmgwError.from(err).message}\n`);
      return 1;
    }
    let inv: Inventory;
    try {
      await checkIbRoot(this.ibRoot, FLAG_KNOBS.ibRoot);
      inv = await discoverInventory({ nvidiaSmi: this.nvidiaSmi, ibRoot: this.ibRoot, noGpu: this.noGpu, fabrics });
    } catch (err) {
      const e = LlmgwError.from(err, 'LLMGW_DISCOVERY_FAILED');
      for (const line of e.message.split('\n')) this.context.stderr.write(`llmgw agent inventory: ${line}\n`);
      return 1;
    }
    this.context.stdout.write(this.json ? JSON.stringify(inv, null, 2) + '\n' : renderInventory(inv, this.noGpu));
    return 0;
  }
}

/** `["ib-a=mlx5_0,mlx5_1"]` → `{ "ib-a": ["mlx5_0", "mlx5_1"] }`; `ib-a=` is kept empty, for validation to reject. */
export function parseFabricFlags(flags: readonly string[]): FabricConfig | undefined {
  if (flags.length === 0) return undefined;
  const out: Record<string, string[]> = {};
  for (const flag of flags) {
    const eq = flag.indexOf('=');
    if (eq < 0) throw new LlmgwError('LLMGW_CONFIG_INVALID', `--fabric ${JSON.stringify(flag)}: expected NAME=HCA[,HCA…], e.g. ib-a=mlx5_0,mlx5_1`);
    const name = flag.slice(0, eq).trim();
    if (Object.hasOwn(out, name)) throw new LlmgwError('LLMGW_CONFIG_INVALID', `--fabric ${name} is given twice: list all its HCAs in one flag`);
    out[name] = flag
      .slice(eq + 1)
      .split(',')
      .map((h) => h.trim())
      .filter((h) => h !== '');
  }
  return out;
}

function table(rows: string[][], indent = '  '): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => indent + r.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n') + '\n';
}

const dash = (v: string | number | null | undefined): string => (v === null || v === undefined || v === '' ? '-' : String(v));

function ranges(ids: readonly number[]): string {
  const out: string[] = [];
  let start = ids[0]!;
  let prev = start;
  for (const id of [...ids.slice(1), NaN]) {
    if (id === prev + 1) {
      prev = id;
      continue;
    }
    out.push(start === prev ? String(start) : `${start}-${prev}`);
    start = prev = id;
  }
  return out.join(',');
}

export function renderInventory(inv: Inventory, gpusSkipped = false): string {
  let s = '';
  if (gpusSkipped) {
    s += 'GPUs: not discovered (--no-gpu)\n';
  } else {
    s += `GPUs (${inv.gpus.length})\n`;
    s += table([
      ['IDX', 'CLASS', 'NAME', 'MEMORY', 'USED', 'CC', 'TEMP', 'ECC', 'NVLINK', 'BUS', 'HEALTH'],
      ...inv.gpus.map((g) => [
        String(g.index),
        dash(g.class),
        dash(g.name),
        g.memoryTotalMiB === null ? '-' : `${g.memoryTotalMiB} MiB`,
        g.memoryUsedMiB === null ? '-' : `${g.memoryUsedMiB} MiB`,
        dash(g.computeCapability),
        g.temperatureC === null ? '-' : `${g.temperatureC}C`,
        dash(g.eccUncorrected),
        dash(g.nvlinkDomain),
        dash(g.pciBusId),
        g.problems.length === 0 ? 'ok' : `${g.problems.length} problem${g.problems.length === 1 ? '' : 's'}`,
      ]),
    ]);
    const domains = inv.nvlinkDomains.map((d) => `${d.id}: GPUs ${ranges(d.gpus)} (NV${d.minLinks})`);
    s += `  NVLink domains: ${domains.length > 0 ? domains.join('; ') : 'none'}\n`;
  }
  s += `\nHCAs (${inv.hcas.length})\n`;
  if (inv.hcas.length === 0) {
    s += '  none: this node is a single-node island and cannot host multi-node replicas\n';
  } else {
    s += table([
      ['HCA', 'PORT', 'STATE', 'PHYS', 'RATE', 'LINK', 'LID', 'NUMA', 'FABRIC'],
      ...inv.hcas.flatMap((h) =>
        (h.ports.length > 0 ? h.ports : [null]).map((p) => [
          h.name,
          p ? String(p.port) : '-',
          dash(p?.state),
          dash(p?.physState),
          p?.rateGbps == null ? '-' : `${p.rateGbps} Gb/s`,
          p ? (p.linkLayer === 'Ethernet' ? 'Ethernet (RoCE)' : p.linkLayer) : '-',
          p?.lid == null ? '-' : `0x${p.lid.toString(16)}`,
          dash(h.numaNode),
          dash(h.fabric),
        ]),
      ),
    ]);
    const fabrics = inv.fabrics.map((f) => `${f.name} (${f.linkLayer}${f.rateGbps === null ? '' : `, ${f.rateGbps} Gb/s`}): ${f.hcas.join(', ')}`);
    s += `  Fabrics: ${fabrics.length > 0 ? fabrics.join('; ') : 'none'}\n`;
  }
  const problems = inv.gpus.flatMap((g) => g.problems);
  s += `\nProblems (${problems.length})\n`;
  s += problems.length === 0 ? '  none\n' : problems.map((p) => `  ${p}\n`).join('');
  if (inv.warnings.length > 0) {
    s += `\nWarnings (${inv.warnings.length})\n`;
    s += inv.warnings.map((w) => `  ${w}\n`).join('');
  }
  return s;
}
