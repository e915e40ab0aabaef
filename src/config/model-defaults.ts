// Defaults that depend on other values of the same model, which a JSON Schema `default`
// cannot state: a model's source is its name, its scaling depends on whether it has
// profiles, a profile's GPUs per node on its parallel sizes. The cross-checks judge the
// values these give and the loader fills them in, so both see the same numbers.

/** min: 1 for a model with profiles (it is there to be placed), else 0; max: min, and at least 1. */
export function scalingOf(hasProfiles: boolean, min: number | undefined, max: number | undefined): { min: number; max: number } {
  const lo = min ?? (hasProfiles ? 1 : 0);
  return { min: lo, max: max ?? Math.max(lo, 1) };
}

/** tp × pp spread over the nodes; not an integer when they do not divide evenly (a config problem). */
export function gpusPerNodeOf(tp: number, pp: number, nodes: number): number {
  return (tp * pp) / nodes;
}

interface RawProfile {
  tp: number;
  pp: number;
  nodes: number;
  gpus_per_node?: number;
}

interface RawModel {
  name: string;
  source?: string;
  scaling: { min?: number; max?: number };
  profiles: RawProfile[];
}

/** Fills the dependent defaults in place. Only for data the schema and the cross-checks passed. */
export function fillModelDefaults(models: RawModel[]): void {
  for (const m of models) {
    m.source ??= m.name;
    const s = scalingOf(m.profiles.length > 0, m.scaling.min, m.scaling.max);
    m.scaling.min = s.min;
    m.scaling.max = s.max;
    for (const p of m.profiles) p.gpus_per_node ??= gpusPerNodeOf(p.tp, p.pp, p.nodes);
  }
}
