import type { Admission } from '../router/admission/admission.js';
import type { Catalog, CatalogEntry } from '../router/catalog.js';
import type { Profile } from '../router/scheduler/types.js';

/**
 * What the data port decides once per model, at config load, instead of on every
 * request: the chain of models to try, the default routing profile, the admission
 * controller. Resolving a request's model is then one map lookup.
 */
export interface ModelRoute {
  readonly entry: CatalogEntry;
  /** The model, then its fallbacks, as canonical names. */
  readonly chain: readonly string[];
  /** The routing profile when the request names none. */
  readonly profile: Profile;
  /** Null when admission is off. */
  readonly admission: Admission | null;
}

export interface RouteInputs {
  catalog: Catalog;
  profiles: ReadonlyMap<string, Profile>;
  /** Routing profile per canonical model name, where the config sets one. */
  modelProfiles: ReadonlyMap<string, string>;
  defaultProfile: string;
  admissions: ReadonlyMap<string, Admission> | null;
}

/** Every name a client may use (canonical and alias) → its model's route. */
export function buildModelRoutes(i: RouteInputs): Map<string, ModelRoute> {
  const routes = new Map<string, ModelRoute>();
  for (const entry of i.catalog.entries) {
    const profileName = i.modelProfiles.get(entry.name) ?? i.defaultProfile;
    const profile = i.profiles.get(profileName);
    // The config's cross-check refuses unknown profile names; this is a programming error.
    if (!profile) throw new Error(`model '${entry.name}': routing profile '${profileName}' is not built`);
    const route: ModelRoute = {
      entry,
      chain: [entry.name, ...entry.fallbacks.map((f) => i.catalog.resolve(f)?.name ?? f)],
      profile,
      admission: i.admissions?.get(entry.name) ?? null,
    };
    routes.set(entry.name, route);
    for (const a of entry.aliases) routes.set(a, route);
  }
  return routes;
}
