// Rules a JSON Schema cannot state: names that must be unique across lists, references
// between lists, and values that need real parsing. They run on the data even when the
// schema has already found problems, so one start reports everything; each check looks
// only at values of the right shape and leaves the rest to the schema's messages.
//
// Rules:
// - model names and aliases share one namespace: none may repeat, in any model.
// - a fallback names another model (by name or alias) of the catalog.
// - profile names are unique within a model; endpoint ids are unique.
// - endpoints and simulate entries name catalog models by name (an alias is refused
//   with the name to use: the engine serves the name, not the alias).
// - the catalog lists at least one model: a config that serves nothing is a mistake
//   (an empty file is not the embedded default), not a server that answers only 404s.
// - a model must be servable: it has profiles (the control plane places it), or an
//   endpoint or a simulate entry names it. A catalog entry nothing can serve is a
//   mistake that would otherwise surface as 503s at request time.
// - listen and admin_listen parse as HOST:PORT and are not the same address.
// - endpoint urls parse as http(s) URLs.
// - routing profile names are unique; a model's routing_profile and
//   router.default_profile name a built-in or configured profile.
// - admission band names are unique; default_band and a profile's band name a band.

import { parseHostPort } from '../net/host-port.js';
import { didYouMean, formatPath, HOST_PORT_MESSAGE, URL_MESSAGE, show, type RawProblem, type Segment } from './problems.js';
import { BUILTIN_ROUTING_PROFILES } from './routing-profiles.js';
import { DEFAULT_BAND_NAMES, HOST_PORT_PATTERN, HTTP_URL_PATTERN } from './schema.js';

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const isName = (v: unknown): v is string => typeof v === 'string' && v !== '';

export function crossCheck(data: unknown): RawProblem[] {
  if (!isObj(data)) return [];
  const out: RawProblem[] = [];
  const fail = (segments: Segment[], message: string): void => void out.push({ segments, message });

  checkAddresses(data, fail);
  const profiles = checkRoutingProfiles(data, fail);

  // Names and aliases: one namespace. `taken` remembers where each was first declared
  // and `owner` which model it resolves to.
  const models = list(data.models);
  if (models.length === 0 && (data.models === undefined || Array.isArray(data.models))) {
    fail(['models'], 'lists no model, so nothing would be served: add a model and an endpoint or a simulate entry that serves it (run without --config for the embedded default)');
  }
  const taken = new Map<string, Segment[]>();
  const owner = new Map<string, number>();
  const names = new Map<string, number>();
  models.forEach((m, i) => {
    if (!isObj(m) || !isName(m.name)) return;
    const at: Segment[] = ['models', i, 'name'];
    const prev = taken.get(m.name);
    if (prev) return fail(at, `'${m.name}' is already taken by ${formatPath(prev)}`);
    taken.set(m.name, at);
    owner.set(m.name, i);
    names.set(m.name, i);
  });
  models.forEach((m, i) => {
    if (!isObj(m)) return;
    list(m.aliases).forEach((a, j) => {
      if (!isName(a)) return;
      const at: Segment[] = ['models', i, 'aliases', j];
      if (a === m.name) return fail(at, `'${a}' is the model's own name`);
      const prev = taken.get(a);
      if (prev) return fail(at, `'${a}' is already taken by ${formatPath(prev)}`);
      taken.set(a, at);
      owner.set(a, i);
    });
  });

  models.forEach((m, i) => {
    if (!isObj(m)) return;
    list(m.fallbacks).forEach((f, j) => {
      if (!isName(f)) return;
      const at: Segment[] = ['models', i, 'fallbacks', j];
      const target = owner.get(f);
      if (target === undefined) fail(at, `'${f}' is not a model in the catalog${didYouMean(f, taken.keys())}`);
      else if (target === i) fail(at, `'${f}' is this model itself`);
    });
    if (isName(m.routing_profile) && !profiles.has(m.routing_profile)) {
      fail(['models', i, 'routing_profile'], `'${m.routing_profile}' is not a routing profile${didYouMean(m.routing_profile, profiles)}; have: ${[...profiles].join(', ')}`);
    }
    const profileNames = new Map<string, number>();
    list(m.profiles).forEach((p, k) => {
      if (!isObj(p) || !isName(p.name)) return;
      const prev = profileNames.get(p.name);
      if (prev !== undefined) fail(['models', i, 'profiles', k, 'name'], `'${p.name}' is already taken by models[${i}].profiles[${prev}].name`);
      else profileNames.set(p.name, k);
    });
  });

  // References from engines to the catalog.
  const served = new Set<number>();
  const reference = (v: unknown, at: Segment[]): void => {
    if (!isName(v)) return;
    const i = owner.get(v);
    if (i !== undefined) served.add(i);
    if (names.has(v)) return;
    if (i !== undefined) fail(at, `'${v}' is an alias of '${String((models[i] as Obj).name)}'; name the model itself`);
    else fail(at, `'${v}' is not a model in the catalog${didYouMean(v, names.keys())}`);
  };

  const ids = new Map<string, number>();
  list(data.endpoints).forEach((e, i) => {
    if (!isObj(e)) return;
    if (isName(e.id)) {
      const prev = ids.get(e.id);
      if (prev !== undefined) fail(['endpoints', i, 'id'], `'${e.id}' is already taken by endpoints[${prev}].id`);
      else ids.set(e.id, i);
    }
    if (typeof e.url === 'string' && new RegExp(HTTP_URL_PATTERN).test(e.url) && !URL.canParse(e.url)) {
      fail(['endpoints', i, 'url'], `${URL_MESSAGE}, got ${show(e.url)}`);
    }
    list(e.models).forEach((name, j) => reference(name, ['endpoints', i, 'models', j]));
  });
  list(data.simulate).forEach((s, i) => {
    if (isObj(s)) reference(s.model, ['simulate', i, 'model']);
  });

  models.forEach((m, i) => {
    if (!isObj(m) || !isName(m.name) || names.get(m.name) !== i) return;
    if (Array.isArray(m.profiles) && m.profiles.length > 0) return;
    if (served.has(i)) return;
    fail(['models', i], `'${m.name}' cannot be served: give it profiles, or name it in an endpoint or a simulate entry`);
  });

  return out;
}

/** Checks router.profiles and router.default_profile; returns every profile name a model may use. */
function checkRoutingProfiles(data: Obj, fail: (segments: Segment[], message: string) => void): Set<string> {
  const known = new Set(BUILTIN_ROUTING_PROFILES.map((p) => p.name));
  const router = isObj(data.router) ? data.router : {};
  const declared = new Map<string, number>();
  list(router.profiles).forEach((p, i) => {
    if (!isObj(p) || !isName(p.name)) return;
    const prev = declared.get(p.name);
    if (prev !== undefined) return fail(['router', 'profiles', i, 'name'], `'${p.name}' is already taken by router.profiles[${prev}].name`);
    declared.set(p.name, i);
    known.add(p.name);
  });
  const d = router.default_profile;
  if (isName(d) && !known.has(d)) fail(['router', 'default_profile'], `'${d}' is not a routing profile${didYouMean(d, known)}; have: ${[...known].join(', ')}`);

  const admission = isObj(router.admission) ? router.admission : {};
  const bands = new Map<string, number>();
  const bandList = Array.isArray(admission.bands) ? admission.bands : DEFAULT_BAND_NAMES.map((name) => ({ name }));
  bandList.forEach((b, i) => {
    if (!isObj(b) || !isName(b.name)) return;
    const prev = bands.get(b.name);
    if (prev !== undefined) return fail(['router', 'admission', 'bands', i, 'name'], `'${b.name}' is already taken by router.admission.bands[${prev}].name`);
    bands.set(b.name, i);
  });
  const bandRef = (v: unknown, at: Segment[]): void => {
    if (isName(v) && !bands.has(v)) fail(at, `'${v}' is not an admission band${didYouMean(v, bands.keys())}; have: ${[...bands.keys()].join(', ')}`);
  };
  bandRef(admission.default_band, ['router', 'admission', 'default_band']);
  list(router.profiles).forEach((p, i) => {
    if (isObj(p)) bandRef(p.band, ['router', 'profiles', i, 'band']);
  });
  return known;
}

function checkAddresses(data: Obj, fail: (segments: Segment[], message: string) => void): void {
  const parsed: Record<string, { host: string; port: number }> = {};
  for (const key of ['listen', 'admin_listen']) {
    const v = data[key];
    if (typeof v !== 'string' || !new RegExp(HOST_PORT_PATTERN).test(v)) continue; // the schema reports it
    try {
      parsed[key] = parseHostPort(v, key);
    } catch {
      fail([key], `${HOST_PORT_MESSAGE}, got ${show(v)} (ports go up to 65535)`);
    }
  }
  const a = parsed.listen;
  const b = parsed.admin_listen;
  if (a && b && a.port !== 0 && a.port === b.port && (a.host === b.host || isWildcard(a.host) || isWildcard(b.host))) {
    fail(['admin_listen'], `must differ from listen (both use port ${a.port})`);
  }
}

const isWildcard = (host: string): boolean => host === '0.0.0.0' || host === '::' || host === '';
