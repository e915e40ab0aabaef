// Which of a node's free GPUs a shard takes. A tensor-parallel group whose all-reduces
// cross NVLink domains falls back to PCIe and runs several times slower, so the shard is
// kept inside one domain when one has room, and spread over as few domains as possible
// when none has. Without topology (nvidia-smi's `topo -m` failed) it takes the lowest
// indices, which is right only by the accident of how vendors number slots.
import type { FleetGpu } from '../messages/fleet.js';

/**
 * `free` must hold GPUs of one class only, at least `want` of them. Of the domains that
 * fit, the smallest: the larger ones stay whole for the wider groups that need them.
 * Returns indices ascending.
 */
export function chooseGpus(free: readonly FleetGpu[], want: number): number[] {
  const byDomain = new Map<number, number[]>();
  const unknown: number[] = [];
  for (const g of free) {
    if (g.nvlinkDomain === null) unknown.push(g.index);
    else {
      const list = byDomain.get(g.nvlinkDomain);
      if (list) list.push(g.index);
      else byDomain.set(g.nvlinkDomain, [g.index]);
    }
  }
  const asc = (a: number, b: number): number => a - b;
  // A GPU with no NVLink peer is the best home for a group of one: every domain stays whole.
  if (want === 1 && unknown.length > 0) return [Math.min(...unknown)];
  const groups = [...byDomain.entries()].map(([id, gpus]) => ({ id, gpus: gpus.sort(asc) }));
  let fit: { id: number; gpus: number[] } | null = null;
  for (const g of groups) {
    if (g.gpus.length < want) continue;
    if (!fit || g.gpus.length < fit.gpus.length || (g.gpus.length === fit.gpus.length && g.id < fit.id)) fit = g;
  }
  if (fit) return fit.gpus.slice(0, want);
  // No domain has room: the largest domains first, so the group crosses the fewest links;
  // GPUs of unknown domain last, each as good as a domain of one.
  groups.sort((a, b) => b.gpus.length - a.gpus.length || a.id - b.id);
  const out: number[] = [];
  for (const g of groups) for (const i of g.gpus) if (out.length < want) out.push(i);
  for (const i of unknown.sort(asc)) if (out.length < want) out.push(i);
  return out.sort(asc);
}
