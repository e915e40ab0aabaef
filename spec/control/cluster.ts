// Builders of registrations for the control-plane specs and the placement bench.
import type { FleetFabric, FleetGpu, NodeRegistration } from '../../src/messages/fleet.js';
import type { PlacementProfile } from '../../src/control/placement.js';
import { mulberry32 } from '../support/rng.js';

export const CC: Record<string, string> = { 'h100-80g': '9.0', 'a100-40g': '8.0', 'l40s-45g': '8.9' };

/** `count` GPUs of one class; `domainSize` > 0 puts them in NVLink domains of that many. */
export function gpus(cls: string, count: number, domainSize = 0, from = 0): FleetGpu[] {
  return Array.from({ length: count }, (_, i) => ({
    index: from + i,
    class: cls,
    computeCapability: CC[cls] ?? '9.0',
    nvlinkDomain: domainSize > 0 ? Math.floor(i / domainSize) : null,
    problems: [],
  }));
}

export function fabric(name: string, hcas: readonly string[] = ['mlx5_0', 'mlx5_1']): FleetFabric {
  return { name, hcas, linkLayer: 'InfiniBand' };
}

export function node(id: string, g: readonly FleetGpu[], fabrics: readonly FleetFabric[] = []): NodeRegistration {
  return { id, address: `10.0.0.${id.length}`, gpus: g, fabrics };
}

export function profile(name: string, over: Partial<PlacementProfile> = {}): PlacementProfile {
  return { name, engine: 'vllm', gpu_class: 'h100-80g', tp: 1, pp: 1, nodes: 1, ...over };
}

/** A small deterministic generator (mulberry32): a failing seed replays the same cluster. */
export function rng(seed: number): { int(n: number): number; pick<T>(xs: readonly T[]): T; chance(p: number): boolean } {
  const next = mulberry32(seed);
  return {
    int: (n) => Math.floor(next() * n),
    pick: (xs) => xs[Math.floor(next() * xs.length)]!,
    chance: (p) => next() < p,
  };
}
