// InfiniBand and RoCE adapters, read from sysfs exactly as the kernel formats it
// (drivers/infiniband/core/sysfs.c): every file one line ending in a newline,
// `state` as "4: ACTIVE", `rate` as "400 Gb/sec (4X NDR)", `lid` as unpadded hex.
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { LlmgwError } from '../../errors.js';

export const SYSFS_INFINIBAND = '/sys/class/infiniband';

/** `InfiniBand` is native IB; `Ethernet` is RoCE; `Unknown` is what the kernel prints otherwise. */
export type LinkLayer = 'InfiniBand' | 'Ethernet' | 'Unknown';

export interface IbPort {
  readonly port: number;
  /** Logical state without its number: DOWN, INIT, ARMED, ACTIVE, ACTIVE_DEFER. Only ACTIVE carries traffic. */
  readonly state: string | null;
  /** Physical state: LinkUp, Polling (no cable or no peer), Disabled, … */
  readonly physState: string | null;
  /** Negotiated rate; fractional on old links ("2.5 Gb/sec (1X)"). */
  readonly rateGbps: number | null;
  readonly linkLayer: LinkLayer;
  /** Local identifier assigned by the subnet manager; 0 on RoCE and on an IB port no SM has configured. */
  readonly lid: number | null;
}

export interface DiscoveredHca {
  readonly name: string;
  /** NUMA node of the adapter's PCI device; null when the kernel says -1 (unknown) or there is none. */
  readonly numaNode: number | null;
  readonly ports: readonly IbPort[];
}

export interface IbDiscovery {
  readonly hcas: DiscoveredHca[];
  /** Adapters that could not be read, one sentence each; they do not hide the others. */
  readonly warnings: string[];
}

/** "4: ACTIVE" → { code: 4, name: "ACTIVE" }; text without a number keeps its text. */
export function parseEnumerated(raw: string): { code: number | null; name: string } {
  const m = /^\s*(\d+):\s*(.*?)\s*$/.exec(raw);
  if (m) return { code: Number(m[1]), name: m[2]! };
  return { code: null, name: raw.trim() };
}

/** "400 Gb/sec (4X NDR)" → 400, "2.5 Gb/sec (1X)" → 2.5; null when unreadable. */
export function parseRate(raw: string): number | null {
  const m = /^\s*(\d+(?:\.\d+)?)\s*Gb\/sec\b/.exec(raw);
  return m ? Number(m[1]) : null;
}

/** "0x1a" → 26; decimal is accepted too, as some drivers print it. */
export function parseLid(raw: string): number | null {
  const v = raw.trim().toLowerCase();
  if (/^0x[0-9a-f]+$/.test(v)) return parseInt(v.slice(2), 16);
  if (/^\d+$/.test(v)) return Number(v);
  return null;
}

/** "1" → 1; "-1" (the kernel's "unknown") and anything unreadable → null. */
export function parseNumaNode(raw: string): number | null {
  const v = raw.trim();
  return /^\d+$/.test(v) ? Number(v) : null;
}

export function parseLinkLayer(raw: string): LinkLayer {
  const v = raw.trim();
  return v === 'InfiniBand' || v === 'Ethernet' ? v : 'Unknown';
}

export function isPortActive(p: IbPort): boolean {
  return p.state === 'ACTIVE';
}

async function readAttr(path: string): Promise<string | null> {
  try {
    return await readFile(path, 'utf8');
  } catch {
    return null;
  }
}

async function isDir(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory(); // follows the symlinks sysfs is made of
  } catch {
    return false;
  }
}

async function readPort(dir: string, port: number): Promise<IbPort> {
  const [state, phys, rate, layer, lid] = await Promise.all(
    ['state', 'phys_state', 'rate', 'link_layer', 'lid'].map((f) => readAttr(join(dir, f))),
  );
  return {
    port,
    state: state === null ? null : parseEnumerated(state).name,
    physState: phys === null ? null : parseEnumerated(phys).name,
    rateGbps: rate === null ? null : parseRate(rate),
    linkLayer: layer === null ? 'Unknown' : parseLinkLayer(layer),
    lid: lid === null ? null : parseLid(lid),
  };
}

/**
 * Refuses an InfiniBand root that does not exist unless it is the default: only the
 * kernel's own directory is absent for a good reason (no InfiniBand driver loaded); any
 * other path that is missing is a typo, which must not read as "no adapters". An
 * existing, empty directory is a node without adapters.
 */
export async function checkIbRoot(root: string, knob: string): Promise<void> {
  if (root === SYSFS_INFINIBAND) return;
  const st = await stat(root).catch((err: NodeJS.ErrnoException) => err);
  if (st instanceof Error) {
    const why = st.code === 'ENOENT' ? 'does not exist' : `cannot be read (${st.code ?? st.message})`;
    throw new LlmgwError('LLMGW_DISCOVERY_FAILED', `InfiniBand root ${root} ${why}: check ${knob} (normally ${SYSFS_INFINIBAND}; an empty directory means no adapters)`, { root });
  }
  if (!st.isDirectory()) throw new LlmgwError('LLMGW_DISCOVERY_FAILED', `InfiniBand root ${root} is not a directory: check ${knob} (normally ${SYSFS_INFINIBAND})`, { root });
}

/**
 * Every adapter under `root` (default /sys/class/infiniband), sorted by name, ports
 * sorted by number. No such directory is normal, not an error: a node without
 * InfiniBand is a single-node island. A root that exists but cannot be read is an
 * error, because "no adapters" would then be a lie.
 */
export async function discoverHcas(root: string = SYSFS_INFINIBAND): Promise<IbDiscovery> {
  let names: string[];
  try {
    names = await readdir(root);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { hcas: [], warnings: [] };
    throw new LlmgwError('LLMGW_DISCOVERY_FAILED', `cannot read ${root}: ${(err as Error).message}`, { root });
  }
  const hcas: DiscoveredHca[] = [];
  const warnings: string[] = [];
  for (const name of names.sort()) {
    const dir = join(root, name);
    if (!(await isDir(dir))) continue;
    let portNames: string[];
    try {
      portNames = await readdir(join(dir, 'ports'));
    } catch (err) {
      warnings.push(`adapter ${name} under ${root} has no readable ports directory (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}): it is left out; check its driver`);
      continue;
    }
    const numbers = portNames.filter((p) => /^\d+$/.test(p)).map(Number).sort((a, b) => a - b);
    const ports = await Promise.all(numbers.map((n) => readPort(join(dir, 'ports', String(n)), n)));
    const numa = await readAttr(join(dir, 'device', 'numa_node'));
    hcas.push({ name, numaNode: numa === null ? null : parseNumaNode(numa), ports });
  }
  return { hcas, warnings };
}
