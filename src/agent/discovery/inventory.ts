// A node's inventory: its GPUs with their class, NVLink domain and health, its
// InfiniBand/RoCE adapters with their fabric, and what is worth an operator's look.
// It is what the agent reports and what `llmgw agent inventory` prints.
import { LlmgwError } from '../../errors.js';
import { resolveFabrics, type FabricAttachment, type FabricConfig } from './fabrics.js';
import { checkOverrides, deriveGpuClass, overrideFor, type ClassOverrides } from './gpu-class.js';
import { gpuProblems } from './health.js';
import { discoverHcas, type DiscoveredHca, type IbPort } from './infiniband.js';
import {
  COMPUTE_APPS_ARGS,
  GPU_QUERY_ARGS,
  TOPOLOGY_ARGS,
  nvlinkDomains,
  parseComputeApps,
  parseGpuQuery,
  parseTopology,
  runNvidiaSmi,
  type ComputeApp,
  type NvlinkDomain,
  type SmiGpu,
  type Topology,
} from './nvidia-smi.js';
import { FLAG_KNOBS, type DiscoveryKnobs } from './knobs.js';

export interface Gpu {
  readonly index: number;
  readonly uuid: string | null;
  readonly name: string | null;
  /** `h100-80g`; null when it can be neither derived nor overridden (then `problems` says so). */
  readonly class: string | null;
  readonly memoryTotalMiB: number | null;
  readonly memoryUsedMiB: number | null;
  readonly computeCapability: string | null;
  readonly pciBusId: string | null;
  readonly driverVersion: string | null;
  readonly temperatureC: number | null;
  readonly eccUncorrected: number | null;
  /** Id of the NVLink domain the GPU is in; null with no NVLink peer, or topology unknown. */
  readonly nvlinkDomain: number | null;
  /** From `topo -m`; null where not printed. */
  readonly numaNode: number | null;
  /** Empty when the card may take an engine; otherwise one actionable sentence each. */
  readonly problems: readonly string[];
}

export interface Hca {
  readonly name: string;
  readonly numaNode: number | null;
  /** The fabric the agent config labels this adapter with; null when unlabelled. */
  readonly fabric: string | null;
  readonly ports: readonly IbPort[];
}

export interface Inventory {
  readonly gpus: readonly Gpu[];
  readonly hcas: readonly Hca[];
  readonly nvlinkDomains: readonly NvlinkDomain[];
  /** The fabrics this node is attached to now: only found adapters with an ACTIVE port. */
  readonly fabrics: readonly FabricAttachment[];
  /** Sentences: what is accepted but deserves a look (unlabelled adapters, missing topology, …). */
  readonly warnings: readonly string[];
}

export interface DiscoverOptions {
  /** Path to nvidia-smi, or a bare name looked up on PATH. */
  readonly nvidiaSmi: string;
  /** The sysfs InfiniBand class directory (normally /sys/class/infiniband). */
  readonly ibRoot: string;
  /** Skip GPU discovery: a node without GPUs (or whose GPUs are not to be used). */
  readonly noGpu: boolean;
  /** PIDs of the engines this agent runs; a compute process with any other PID is foreign. */
  readonly ours?: ReadonlySet<number>;
  readonly classOverrides?: ClassOverrides;
  readonly fabrics?: FabricConfig;
  /** Per nvidia-smi call. */
  readonly timeoutMs?: number;
  /** How the caller sets these inputs, for failures (default: the `agent inventory` flags). */
  readonly knobs?: DiscoveryKnobs;
}

/** Outputs of the three nvidia-smi calls; the last two may have failed without failing discovery. */
export interface SmiOutputs {
  readonly gpuQuery: string;
  readonly computeApps: string | { readonly error: string };
  readonly topology: string | { readonly error: string };
}

/**
 * Discovers the node. Fails (LLMGW_DISCOVERY_FAILED) when GPUs are expected and
 * nvidia-smi is missing, fails, or finds none — an empty, healthy-looking inventory
 * would hide a broken driver — and (LLMGW_CONFIG_INVALID) when the fabric labels or
 * class overrides are wrong. A failed compute-process listing keeps every card out of
 * placement; a failed `topo -m` only loses the NVLink domains, with a warning.
 */
export async function discoverInventory(opts: DiscoverOptions): Promise<Inventory> {
  let smi: SmiOutputs | null = null;
  if (!opts.noGpu) {
    const run = (args: readonly string[]): Promise<string> => runNvidiaSmi(opts.nvidiaSmi, args, opts.timeoutMs, opts.knobs);
    const soft = (args: readonly string[]): Promise<string | { error: string }> => run(args).catch((err: unknown) => ({ error: LlmgwError.from(err).message }));
    const gpuQuery = await run(GPU_QUERY_ARGS);
    const [computeApps, topology] = await Promise.all([soft(COMPUTE_APPS_ARGS), soft(TOPOLOGY_ARGS)]);
    smi = { gpuQuery, computeApps, topology };
  }
  const ib = await discoverHcas(opts.ibRoot);
  return assembleInventory({ smi, nvidiaSmi: opts.nvidiaSmi, knobs: opts.knobs, hcas: ib.hcas, ibWarnings: ib.warnings, ours: opts.ours, classOverrides: opts.classOverrides, fabrics: opts.fabrics });
}

export interface AssembleInput {
  /** Null: GPU discovery skipped. */
  readonly smi: SmiOutputs | null;
  /** For messages only. */
  readonly nvidiaSmi?: string;
  readonly knobs?: DiscoveryKnobs | undefined;
  readonly hcas: readonly DiscoveredHca[];
  readonly ibWarnings?: readonly string[];
  readonly ours?: ReadonlySet<number> | undefined;
  readonly classOverrides?: ClassOverrides | undefined;
  readonly fabrics?: FabricConfig | undefined;
}

/** The pure half of discovery: parse, classify, assess health, label fabrics. */
export function assembleInventory(input: AssembleInput): Inventory {
  const warnings: string[] = [...(input.ibWarnings ?? [])];
  const gpus: Gpu[] = [];
  let domains: NvlinkDomain[] = [];

  if (input.smi) {
    const parsed = parseGpuQuery(input.smi.gpuQuery);
    if (parsed.length === 0) {
      throw new LlmgwError('LLMGW_DISCOVERY_FAILED', `nvidia-smi${input.nvidiaSmi ? ` (${input.nvidiaSmi})` : ''} lists no GPUs: ${(input.knobs ?? FLAG_KNOBS).noGpu} on a node without GPUs, or check that the driver sees them`);
    }
    warnings.push(...checkOverrides(input.classOverrides, parsed));

    let apps: readonly ComputeApp[] | { error: string };
    if (typeof input.smi.computeApps === 'string') {
      try {
        apps = parseComputeApps(input.smi.computeApps);
      } catch (err) {
        apps = { error: LlmgwError.from(err).message };
      }
    } else {
      apps = input.smi.computeApps;
    }
    if (!('error' in apps)) {
      const uuids = new Set(parsed.map((g) => g.uuid));
      for (const app of apps) {
        if (!uuids.has(app.gpuUuid)) warnings.push(`pid ${app.pid} (${app.processName}) runs on ${app.gpuUuid}, which is not a GPU nvidia-smi listed (a MIG instance?): it is not counted against any card`);
      }
    }

    let topo: Topology | null = null;
    if (typeof input.smi.topology === 'string') {
      try {
        topo = parseTopology(input.smi.topology);
      } catch (err) {
        warnings.push(`NVLink domains are unknown: ${LlmgwError.from(err).message}; tensor-parallel groups will not be kept inside one`);
      }
    } else {
      warnings.push(`NVLink domains are unknown: ${input.smi.topology.error}; tensor-parallel groups will not be kept inside one`);
    }
    if (topo) {
      domains = nvlinkDomains(topo);
      const listed = new Set(parsed.map((g) => g.index));
      const inTopo = new Set(topo.gpus);
      if (listed.size !== inTopo.size || [...listed].some((i) => !inTopo.has(i))) {
        warnings.push(`nvidia-smi topo -m shows GPUs ${[...inTopo].join(', ')} but --query-gpu lists ${[...listed].join(', ')}: a GPU may have fallen off the bus; check dmesg`);
      }
    }
    const domainOf = new Map<number, number>();
    for (const d of domains) for (const g of d.gpus) domainOf.set(g, d.id);

    for (const g of parsed) gpus.push(toGpu(g, apps, input.ours ?? new Set(), input.classOverrides, domainOf.get(g.index) ?? null, topo?.gpuNumaNode[g.index] ?? null));
    gpus.sort((a, b) => a.index - b.index);
  }

  const fab = resolveFabrics(input.fabrics, input.hcas);
  warnings.push(...fab.warnings.map((w) => w.message));
  if (!fab.ok) {
    throw new LlmgwError('LLMGW_CONFIG_INVALID', fab.problems.map((p) => p.message).join('\n'), { problems: fab.problems });
  }
  const hcas: Hca[] = input.hcas.map((h) => ({ name: h.name, numaNode: h.numaNode, fabric: fab.labels[h.name] ?? null, ports: h.ports }));
  return { gpus, hcas, nvlinkDomains: domains, fabrics: fab.fabrics, warnings };
}

function toGpu(
  g: SmiGpu,
  apps: readonly ComputeApp[] | { error: string },
  ours: ReadonlySet<number>,
  overrides: ClassOverrides | undefined,
  nvlinkDomain: number | null,
  numaNode: number | null,
): Gpu {
  const problems = gpuProblems({ gpu: g, apps, ours });
  const cls = overrideFor(g, overrides) ?? deriveGpuClass(g.name, g.memoryTotalMiB);
  if (cls === null) {
    const why = g.memoryTotalMiB === null ? 'nvidia-smi gives no memory.total' : `no model can be read from the name ${JSON.stringify(g.name ?? '')}`;
    problems.push(`GPU ${g.index} has no class (${why}): set one for it in the agent config's class overrides, by index or name`);
  }
  return {
    index: g.index,
    uuid: g.uuid,
    name: g.name,
    class: cls,
    memoryTotalMiB: g.memoryTotalMiB,
    memoryUsedMiB: g.memoryUsedMiB,
    computeCapability: g.computeCapability,
    pciBusId: g.pciBusId,
    driverVersion: g.driverVersion,
    temperatureC: g.temperatureC,
    eccUncorrected: g.eccUncorrected,
    nvlinkDomain,
    numaNode,
    problems,
  };
}
