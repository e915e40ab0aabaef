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
// - listen, admin_listen and agent_listen parse as HOST:PORT and no two are the same
//   address (agent_listen counts once a model has profiles: only then is it opened).
// - a profile's GPUs spread evenly over its nodes: gpus_per_node × nodes = tp × pp (its
//   default, tp × pp / nodes, must be a whole number); a multi-node vLLM profile names
//   its launch_mode, an SGLang profile none.
// - scaling.min ≤ scaling.max, defaults included; a model without profiles asks for no
//   replica (min 0), having nothing to place them from.
// - the agent port is either mTLS (agent_tls) or plaintext (agent_insecure), never both,
//   and one of them once a model has profiles: the control plane then needs agents.
// - control.lost_after_ms exceeds unreachable_after_ms; port_range is [lo, hi], lo ≤ hi.
// - simulate_nodes names are unique; simulated nodes need a model with profiles (else no
//   control plane runs to place anything on them) and agent_insecure: true (the
//   in-process agents dial the agent port on loopback and hold no client certificate).
// - endpoint urls parse as http(s) URLs.
// - routing profile names are unique; a model's routing_profile and
//   router.default_profile name a built-in or configured profile.
// - admission band names are unique; default_band and a profile's band name a band.
// - tenancy.budget_fallback names a model of the catalog (by name or alias).

import { isLoopback, parseHostPort } from '../net/host-port.js';
import { didYouMean, formatPath, HOST_PORT_MESSAGE, URL_MESSAGE, show, type RawProblem, type Segment } from './problems.js';
import { gpusPerNodeOf, scalingOf } from './model-defaults.js';
import { BUILTIN_ROUTING_PROFILES } from './routing-profiles.js';
import { DEFAULT_BAND_NAMES, HOST_PORT_PATTERN, HTTP_URL_PATTERN } from './schema.js';

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const isName = (v: unknown): v is string => typeof v === 'string' && v !== '';
const isCount = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 1;
const hasProfiles = (m: unknown): boolean => isObj(m) && Array.isArray(m.profiles) && m.profiles.length > 0;

export function crossCheck(data: unknown): RawProblem[] {
  if (!isObj(data)) return [];
  const out: RawProblem[] = [];
  const fail = (segments: Segment[], message: string): void => void out.push({ segments, message });

  checkAddresses(data, fail);
  checkControlPlane(data, fail);
  checkSimulatedNodes(data, fail);
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
    list(m.profiles).forEach((p, k) => {
      if (isObj(p)) checkProfile(p, ['models', i, 'profiles', k], fail);
    });
    checkScaling(m, i, fail);
  });

  const tenancy = isObj(data.tenancy) ? data.tenancy : {};
  if (isName(tenancy.budget_fallback) && !owner.has(tenancy.budget_fallback)) {
    fail(['tenancy', 'budget_fallback'], `'${tenancy.budget_fallback}' is not a model in the catalog${didYouMean(tenancy.budget_fallback, taken.keys())}`);
  }

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

/** The GPUs of a profile spread evenly over its nodes, and its launch mode suits its engine. */
function checkProfile(p: Obj, at: Segment[], fail: (segments: Segment[], message: string) => void): void {
  const pp = p.pp ?? 1;
  const nodes = p.nodes ?? 1;
  if (isCount(p.tp) && isCount(pp) && isCount(nodes)) {
    const gpus = p.tp * pp;
    if (p.gpus_per_node === undefined) {
      if (!Number.isInteger(gpusPerNodeOf(p.tp, pp, nodes))) {
        fail([...at, 'nodes'], `tp × pp = ${p.tp} × ${pp} = ${gpus} GPUs do not spread evenly over ${nodes} nodes: change nodes, tp or pp`);
      }
    } else if (isCount(p.gpus_per_node) && p.gpus_per_node * nodes !== gpus) {
      fail(
        [...at, 'gpus_per_node'],
        `gpus_per_node × nodes = ${p.gpus_per_node} × ${nodes} = ${p.gpus_per_node * nodes}, but tp × pp = ${p.tp} × ${pp} = ${gpus}: every GPU of the replica is on one of its nodes`,
      );
    }
  }
  const engine = p.engine ?? 'vllm';
  if (engine === 'sglang' && p.launch_mode !== undefined) {
    fail([...at, 'launch_mode'], 'is a vLLM setting: SGLang launches its ranks itself; remove it');
  } else if (engine === 'vllm' && isCount(nodes) && nodes > 1 && p.launch_mode === undefined) {
    fail([...at, 'launch_mode'], `is required for a multi-node vLLM profile (nodes: ${nodes}): ray or mp (vLLM 0.11 and later), whichever its vLLM version runs`);
  }
}

/** min ≤ max as the defaults fill them; a model without profiles asks for no replica. */
function checkScaling(m: Obj, i: number, fail: (segments: Segment[], message: string) => void): void {
  const raw = isObj(m.scaling) ? m.scaling : {};
  const min = raw.min;
  const max = raw.max;
  if ((min !== undefined && !Number.isSafeInteger(min)) || (max !== undefined && !Number.isSafeInteger(max))) return; // the schema reports it
  const s = scalingOf(hasProfiles(m), min as number | undefined, max as number | undefined);
  if (!hasProfiles(m) && s.min > 0) {
    return fail(['models', i, 'scaling', 'min'], `asks for ${s.min} replicas, but the model has no profiles to place them from`);
  }
  if (s.min > s.max) {
    const which = min === undefined ? `the default min ${s.min} (a model with profiles keeps one replica)` : `min ${s.min}`;
    fail(['models', i, 'scaling'], `${which} is above max ${s.max}`);
  }
}

/** The agent port's security and the control plane's timings and port range. */
function checkControlPlane(data: Obj, fail: (segments: Segment[], message: string) => void): void {
  const tls = data.agent_tls !== undefined;
  const insecure = data.agent_insecure === true;
  if (tls && insecure) fail(['agent_insecure'], 'cannot be true while agent_tls is set: the agent port is either mTLS or plaintext; remove one');
  if (!tls && !insecure) {
    const first = list(data.models).findIndex(hasProfiles);
    if (first >= 0) {
      fail(['agent_tls'], `is required: models[${first}] has profiles, so node agents dial the agent port; set agent_tls: {ca, cert, key}, or agent_insecure: true on a trusted network`);
    }
  }

  const control = isObj(data.control) ? data.control : {};
  const unreachable = control.unreachable_after_ms ?? 15_000;
  const lost = control.lost_after_ms ?? 60_000;
  if (Number.isSafeInteger(unreachable) && Number.isSafeInteger(lost) && (lost as number) <= (unreachable as number)) {
    fail(['control', 'lost_after_ms'], `${String(lost)} must exceed control.unreachable_after_ms (${String(unreachable)}): a silent node is unreachable first and lost only later`);
  }
  const range = control.port_range;
  if (Array.isArray(range) && range.length === 2 && Number.isSafeInteger(range[0]) && Number.isSafeInteger(range[1]) && range[0] > range[1]) {
    fail(['control', 'port_range'], `[${String(range[0])}, ${String(range[1])}] is empty: the first port is the lowest, the second the highest`);
  }
}

function checkSimulatedNodes(data: Obj, fail: (segments: Segment[], message: string) => void): void {
  const nodes = list(data.simulate_nodes);
  if (nodes.length === 0) return;
  const seen = new Map<string, number>();
  nodes.forEach((n, i) => {
    if (!isObj(n) || !isName(n.name)) return;
    const prev = seen.get(n.name);
    if (prev !== undefined) fail(['simulate_nodes', i, 'name'], `'${n.name}' is already taken by simulate_nodes[${prev}].name`);
    else seen.set(n.name, i);
  });
  if (!list(data.models).some(hasProfiles)) {
    fail(['simulate_nodes'], 'needs a model with profiles: only the control plane, which runs for such a model, places replicas on nodes; give a model profiles or remove simulate_nodes');
  }
  if (data.agent_insecure !== true) {
    fail(['simulate_nodes'], 'needs agent_insecure: true: the simulated nodes are agents in this process that dial the agent port in plaintext on loopback, with no client certificate for agent_tls');
  }
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
  // The agent port opens only for a control plane, that is once a model has profiles.
  const keys = list(data.models).some(hasProfiles) ? ['listen', 'admin_listen', 'agent_listen'] : ['listen', 'admin_listen'];
  for (const key of keys) {
    const v = data[key];
    if (typeof v !== 'string' || !new RegExp(HOST_PORT_PATTERN).test(v)) continue; // the schema reports it
    try {
      parsed[key] = parseHostPort(v, key);
    } catch {
      fail([key], `${HOST_PORT_MESSAGE}, got ${show(v)} (ports go up to 65535)`);
    }
  }
  // The admin API drains nodes, reloads the config and reads usage: off loopback it needs a token.
  const admin = parsed.admin_listen;
  if (admin && !isLoopback(admin.host) && (typeof data.admin_token !== 'string' || data.admin_token === '')) {
    fail(['admin_token'], `is required: admin_listen ${String(data.admin_listen)} is not a loopback address, and the admin API drains nodes, reloads the config and reads usage; set admin_token, or bind admin_listen to 127.0.0.1`);
  }
  // Each address is reported against the first one it collides with.
  keys.forEach((key, j) => {
    const b = parsed[key];
    const other = keys.slice(0, j).find((k) => {
      const a = parsed[k];
      return a && b && a.port !== 0 && a.port === b.port && (a.host === b.host || isWildcard(a.host) || isWildcard(b.host));
    });
    if (other !== undefined) fail([key], `must differ from ${other} (both use port ${b!.port})`);
  });
}

const isWildcard = (host: string): boolean => host === '0.0.0.0' || host === '::' || host === '';
