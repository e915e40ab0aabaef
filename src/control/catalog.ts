// The catalog the control plane places from, taken from a loaded config: the models
// that have profiles, each profile with every default filled, profiles by priority.
// Pure: it runs wherever the config is loaded, and its result crosses to the control
// thread as plain data.
import type { Config, ProfileConfig } from '../config/index.js';
import type { PlacedModel, PlacedProfile } from '../messages/catalog.js';

/** Models with profiles, in file order; each model's profiles highest priority first, ties in file order. */
export function placedModels(config: Config): PlacedModel[] {
  return config.models
    .filter((m) => m.profiles.length > 0)
    .map((m) => ({
      name: m.name,
      source: m.source,
      scaling: { min: m.scaling.min, max: m.scaling.max },
      // Array.prototype.sort is stable, so equal priorities keep the order of the file.
      profiles: m.profiles.map(placedProfile).sort((a, b) => b.priority - a.priority),
    }));
}

function placedProfile(p: ProfileConfig): PlacedProfile {
  return {
    name: p.name,
    engine: p.engine,
    gpu_class: p.gpu_class,
    tp: p.tp,
    pp: p.pp,
    nodes: p.nodes,
    gpus_per_node: p.gpus_per_node,
    ...(p.launch_mode !== undefined && { launch_mode: p.launch_mode }),
    args: [...p.args],
    env: { ...p.env },
    priority: p.priority,
    weight: p.weight,
    startup_timeout_ms: p.startup_timeout_ms,
  };
}
