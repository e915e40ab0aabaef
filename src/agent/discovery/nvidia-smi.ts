// nvidia-smi is the cgo-free, library-free way to see a node's GPUs: run it, parse
// its CSV and its topology matrix. Everything here but `runNvidiaSmi` is a pure
// parser, so the formats are pinned by specs over real captured output
// (spec/fixtures/hardware) rather than by a GPU.
import { execFile } from 'node:child_process';
import { LlmgwError } from '../../errors.js';
import { FLAG_KNOBS, type DiscoveryKnobs } from './knobs.js';

/** The columns asked of `--query-gpu`, in the order they come back. */
export const GPU_QUERY_FIELDS = [
  'index',
  'uuid',
  'name',
  'memory.total',
  'memory.used',
  'compute_cap',
  'pci.bus_id',
  'driver_version',
  'temperature.gpu',
  'ecc.errors.uncorrected.volatile.total',
] as const;

export const GPU_QUERY_ARGS: readonly string[] = [`--query-gpu=${GPU_QUERY_FIELDS.join(',')}`, '--format=csv,noheader,nounits'];

/** The columns asked of `--query-compute-apps`, in order. */
export const COMPUTE_APPS_FIELDS = ['gpu_uuid', 'pid', 'process_name', 'used_memory'] as const;

export const COMPUTE_APPS_ARGS: readonly string[] = [`--query-compute-apps=${COMPUTE_APPS_FIELDS.join(',')}`, '--format=csv,noheader,nounits'];

export const TOPOLOGY_ARGS: readonly string[] = ['topo', '-m'];

/** One row of `--query-gpu`. A value nvidia-smi could not give is null, never 0. */
export interface SmiGpu {
  readonly index: number;
  readonly uuid: string | null;
  readonly name: string | null;
  readonly memoryTotalMiB: number | null;
  readonly memoryUsedMiB: number | null;
  /** "9.0": kept as text, it is compared as a version, not summed. */
  readonly computeCapability: string | null;
  readonly pciBusId: string | null;
  readonly driverVersion: string | null;
  readonly temperatureC: number | null;
  /** Uncorrected ECC errors since the driver loaded; null where ECC is off or unsupported. */
  readonly eccUncorrected: number | null;
  /** `[GPU is lost]` or `[GPU requires reset]` when nvidia-smi printed one for this card. */
  readonly deviceError: string | null;
}

/** One row of `--query-compute-apps`: a process holding a CUDA context on a GPU. */
export interface ComputeApp {
  readonly gpuUuid: string;
  /** In the host PID namespace when nvidia-smi runs on the host. */
  readonly pid: number;
  readonly processName: string;
  readonly usedMemoryMiB: number | null;
}

// nvidia-smi prints a missing value as one of these, or as any other bracketed text
// (`[Insufficient Permissions]`, …), or bare `N/A`, or nothing at all.
const DEVICE_ERRORS = new Set(['[gpu is lost]', '[gpu requires reset]']);

/** True when a CSV value is nvidia-smi's way of saying "no value". */
export function isUnavailable(raw: string): boolean {
  const v = raw.trim();
  if (v === '') return true;
  if (v.startsWith('[') && v.endsWith(']')) return true;
  const lower = v.toLowerCase();
  return lower === 'n/a' || lower === 'not supported' || lower === 'unknown error';
}

function text(raw: string): string | null {
  return isUnavailable(raw) ? null : raw.trim();
}

// With `nounits` a number is bare; a unit is still tolerated ("81559 MiB") in case a
// wrapper drops the option.
const NUMBER = /^(-?\d+(?:\.\d+)?)(?:\s*(?:MiB|W|C|%))?$/;

function integer(raw: string, field: string, line: string): number | null {
  if (isUnavailable(raw)) return null;
  const m = NUMBER.exec(raw.trim());
  if (!m) throw unexpected(`${field} is ${JSON.stringify(raw.trim())}, not a number`, line);
  return Math.round(Number(m[1]));
}

function unexpected(what: string, line: string): LlmgwError {
  return new LlmgwError('LLMGW_DISCOVERY_FAILED', `unexpected nvidia-smi output: ${what}, in line ${JSON.stringify(line)}`);
}

function lines(out: string): string[] {
  return out
    .replace(/\r/g, '')
    .split('\n')
    .map((l) => l.trimEnd())
    .filter((l) => l.trim() !== '');
}

/**
 * Parses `--query-gpu` CSV (GPU_QUERY_FIELDS, noheader, nounits). Fields are separated
 * by `", "` and never quoted; a name holding a comma is put back together, since the
 * other columns cannot contain one. A line that is not a GPU row is an error: a GPU
 * skipped in silence is a GPU nobody notices is missing.
 */
export function parseGpuQuery(out: string): SmiGpu[] {
  const n = GPU_QUERY_FIELDS.length;
  return lines(out).map((line) => {
    const parts = line.split(',').map((p) => p.trim());
    if (parts.length < n) throw unexpected(`${parts.length} fields where ${n} were asked for`, line);
    // index, uuid, name…, then the 7 fields after name.
    const tail = parts.slice(parts.length - (n - 3));
    const name = parts.slice(2, parts.length - (n - 3)).join(', ');
    const [memTotal, memUsed, cc, bus, driver, temp, ecc] = tail as [string, string, string, string, string, string, string];
    const index = integer(parts[0]!, 'index', line);
    if (index === null || index < 0) throw unexpected(`index is ${JSON.stringify(parts[0])}`, line);
    const deviceError = parts.map((p) => p.toLowerCase()).find((p) => DEVICE_ERRORS.has(p));
    return {
      index,
      uuid: text(parts[1]!),
      name: text(name),
      memoryTotalMiB: integer(memTotal, 'memory.total', line),
      memoryUsedMiB: integer(memUsed, 'memory.used', line),
      computeCapability: text(cc),
      pciBusId: text(bus),
      driverVersion: text(driver),
      temperatureC: integer(temp, 'temperature.gpu', line),
      eccUncorrected: integer(ecc, 'ecc.errors.uncorrected.volatile.total', line),
      deviceError: deviceError ? parts.find((p) => p.toLowerCase() === deviceError)! : null,
    };
  });
}

/** Parses `--query-compute-apps` CSV (COMPUTE_APPS_FIELDS, noheader, nounits). Empty output: no processes. */
export function parseComputeApps(out: string): ComputeApp[] {
  const apps: ComputeApp[] = [];
  for (const line of lines(out)) {
    // Older drivers say so in words even in CSV mode.
    if (/^no running (compute )?processes found/i.test(line.trim())) continue;
    const parts = line.split(',').map((p) => p.trim());
    if (parts.length < 4) throw unexpected(`${parts.length} fields where 4 were asked for`, line);
    const pid = integer(parts[1]!, 'pid', line);
    if (pid === null) throw unexpected('no pid', line);
    apps.push({
      gpuUuid: parts[0]!,
      pid,
      // A process path may hold a comma; the memory column is always last.
      processName: parts.slice(2, -1).join(', '),
      usedMemoryMiB: integer(parts[parts.length - 1]!, 'used_memory', line),
    });
  }
  return apps;
}

/** `nvidia-smi topo -m`: the connection between every pair of devices. */
export interface Topology {
  /** Device labels in column order: `GPU0`…, then `NIC0`… (older drivers print `mlx5_0`…). */
  readonly devices: readonly string[];
  /** GPU indices, in column order. */
  readonly gpus: readonly number[];
  /** `matrix[a][b]`: `X`, `NV18`, `PIX`, `PXB`, `PHB`, `NODE` or `SYS`, as printed. */
  readonly matrix: Readonly<Record<string, Readonly<Record<string, string>>>>;
  /** NUMA node of each GPU index (`NUMA Affinity` column), null where not printed. */
  readonly gpuNumaNode: Readonly<Record<number, number | null>>;
  /** `NIC Legend:` — NIC label to RDMA device name; empty on drivers without the block. */
  readonly nicLegend: Readonly<Record<string, string>>;
}

// nvidia-smi underlines the header with ANSI escapes even into a pipe on some drivers.
const ANSI = /\x1b\[[0-9;]*m/g;
const DEVICE_LABEL = /^(GPU\d+|NIC\d+|mlx\d+_\d+)$/;
const LINK = /^[A-Z][A-Z0-9]*$/;

function cellsOf(line: string): string[] {
  // Real output is tab-separated; a copy that lost its tabs is split on whitespace,
  // which loses only the trailing empty cells, never a link cell.
  return line.includes('\t') ? line.split('\t').map((c) => c.trim()) : line.trim().split(/\s+/);
}

/**
 * Parses `nvidia-smi topo -m`. The header line starts with a tab and names every
 * device; each device row starts with its label and has one cell per device, then
 * (GPU rows only) CPU Affinity, NUMA Affinity and, on newer drivers, GPU NUMA ID,
 * sometimes with an empty cell between them.
 */
export function parseTopology(out: string): Topology {
  const all = out.replace(ANSI, '').replace(/\r/g, '').split('\n');
  const headerAt = all.findIndex((l) => {
    const cells = cellsOf(l).filter((c) => c !== '');
    return cells[0] === 'GPU0';
  });
  if (headerAt < 0) throw new LlmgwError('LLMGW_DISCOVERY_FAILED', 'unexpected nvidia-smi topo -m output: no header line naming GPU0');
  const headerCells = cellsOf(all[headerAt]!).filter((c) => c !== '');
  const devices: string[] = [];
  for (const c of headerCells) {
    if (!DEVICE_LABEL.test(c)) break;
    devices.push(c);
  }
  const matrix: Record<string, Record<string, string>> = {};
  const gpuNumaNode: Record<number, number | null> = {};
  const known = new Set(devices);
  for (const line of all.slice(headerAt + 1)) {
    if (line.trim() === '') break; // the matrix ends at the blank line before "Legend:"
    const cells = cellsOf(line);
    const label = cells[0]!;
    if (!known.has(label)) throw new LlmgwError('LLMGW_DISCOVERY_FAILED', `unexpected nvidia-smi topo -m output: row ${JSON.stringify(label)} is not a device in the header`);
    const row: Record<string, string> = {};
    devices.forEach((d, i) => {
      const v = cells[i + 1];
      if (v === undefined || v === '') throw new LlmgwError('LLMGW_DISCOVERY_FAILED', `unexpected nvidia-smi topo -m output: row ${label} has no cell for ${d}`);
      // X, NV#, PIX, PXB, PHB, NODE, SYS (SOC on old drivers); any other word is
      // accepted as a link type, but a CPU list or a number means the row is short.
      if (!LINK.test(v)) throw new LlmgwError('LLMGW_DISCOVERY_FAILED', `unexpected nvidia-smi topo -m output: row ${label} has ${JSON.stringify(v)} where the link to ${d} should be`);
      row[d] = v;
    });
    matrix[label] = row;
    const gpu = /^GPU(\d+)$/.exec(label);
    if (gpu) {
      const numa = cells[devices.length + 2]?.trim() ?? '';
      gpuNumaNode[Number(gpu[1])] = /^\d+$/.test(numa) ? Number(numa) : null;
    }
  }
  for (const d of devices) {
    if (!matrix[d]) throw new LlmgwError('LLMGW_DISCOVERY_FAILED', `unexpected nvidia-smi topo -m output: no row for ${d}`);
  }
  const nicLegend: Record<string, string> = {};
  const legendAt = all.findIndex((l) => l.trim() === 'NIC Legend:');
  if (legendAt >= 0) {
    for (const line of all.slice(legendAt + 1)) {
      const m = /^\s*(NIC\d+):\s*(\S+)\s*$/.exec(line);
      if (m) nicLegend[m[1]!] = m[2]!;
      else if (line.trim() !== '') break;
    }
  }
  const gpus = devices.filter((d) => d.startsWith('GPU')).map((d) => Number(d.slice(3)));
  return { devices, gpus, matrix, gpuNumaNode, nicLegend };
}

/** GPUs that reach each other over NVLink: a tensor-parallel group should stay inside one. */
export interface NvlinkDomain {
  /** 0, 1, … in order of each domain's lowest GPU index. */
  readonly id: number;
  /** GPU indices, ascending. */
  readonly gpus: readonly number[];
  /** The fewest bonded NVLinks between any two directly linked GPUs of the domain (NV18 → 18). */
  readonly minLinks: number;
}

/**
 * NVLink domains: connected components of the graph whose edges are `NV#` cells
 * between GPUs. A GPU with no NVLink to any other is in no domain. A domain need not
 * be all-to-all (NV-bridged pairs chained through a GPU still form one), which is
 * why each carries its weakest link.
 */
export function nvlinkDomains(topo: Topology): NvlinkDomain[] {
  const parent = new Map<number, number>(topo.gpus.map((g) => [g, g]));
  const find = (g: number): number => {
    let r = g;
    while (parent.get(r) !== r) r = parent.get(r)!;
    parent.set(g, r);
    return r;
  };
  const edges: Array<[number, number, number]> = [];
  for (const a of topo.gpus) {
    for (const b of topo.gpus) {
      if (a >= b) continue;
      // Read both directions: the matrix is symmetric on every capture seen, but a
      // link seen from one side is still a link.
      const m = /^NV(\d+)$/.exec(topo.matrix[`GPU${a}`]![`GPU${b}`]!) ?? /^NV(\d+)$/.exec(topo.matrix[`GPU${b}`]![`GPU${a}`]!);
      if (!m) continue;
      edges.push([a, b, Number(m[1])]);
      const ra = find(a);
      const rb = find(b);
      if (ra !== rb) parent.set(Math.max(ra, rb), Math.min(ra, rb));
    }
  }
  const members = new Map<number, number[]>();
  for (const g of topo.gpus) {
    const r = find(g);
    members.set(r, [...(members.get(r) ?? []), g]);
  }
  const groups = [...members.values()]
    .filter((m) => m.length > 1)
    .map((m) => m.sort((x, y) => x - y))
    .sort((x, y) => x[0]! - y[0]!);
  return groups.map((gpus, id) => {
    const inside = new Set(gpus);
    const links = edges.filter(([a, b]) => inside.has(a) && inside.has(b)).map(([, , n]) => n);
    return { id, gpus, minLinks: Math.min(...links) };
  });
}

/** Default: look the binary up on PATH. */
export const DEFAULT_NVIDIA_SMI = 'nvidia-smi';
/** A cold driver without persistence mode takes seconds per GPU to answer. */
export const DEFAULT_SMI_TIMEOUT_MS = 30_000;

/**
 * Runs nvidia-smi once and returns its stdout. Every way it can fail becomes an
 * LLMGW_DISCOVERY_FAILED that says what to do: missing binary, not executable,
 * hung driver, non-zero exit (whose reason nvidia-smi prints on stdout).
 */
export function runNvidiaSmi(binary: string, args: readonly string[], timeoutMs = DEFAULT_SMI_TIMEOUT_MS, knobs: DiscoveryKnobs = FLAG_KNOBS): Promise<string> {
  const where = binary.includes('/') ? `at ${binary}` : `on PATH (as ${binary})`;
  const cmd = `${binary} ${args.join(' ')}`;
  return new Promise((resolve, reject) => {
    execFile(binary, [...args], { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024, encoding: 'utf8', killSignal: 'SIGKILL' }, (err, stdout, stderr) => {
      if (!err) return resolve(stdout);
      const e = err as NodeJS.ErrnoException & { killed?: boolean; signal?: string | null; code?: string | number | null };
      if (e.code === 'ENOENT') {
        return reject(new LlmgwError('LLMGW_DISCOVERY_FAILED', `nvidia-smi not found ${where}: ${knobs.noGpu} on a node without GPUs, or ${knobs.nvidiaSmi}`, { binary }));
      }
      if (e.code === 'EACCES') {
        return reject(new LlmgwError('LLMGW_DISCOVERY_FAILED', `nvidia-smi ${where} is not executable: check its permissions`, { binary }));
      }
      if (e.killed || e.signal) {
        return reject(
          new LlmgwError('LLMGW_DISCOVERY_FAILED', `${cmd} did not finish within ${timeoutMs} ms: the driver may be hung; check dmesg for Xid errors`, { binary }),
        );
      }
      const said = `${stdout}\n${stderr}`.trim().split('\n').filter(Boolean).slice(0, 3).join(' / ').slice(0, 400);
      reject(
        new LlmgwError('LLMGW_DISCOVERY_FAILED', `${cmd} exited with status ${String(e.code)}${said ? `: ${said}` : ''}`, {
          binary,
          status: e.code,
        }),
      );
    });
  });
}
