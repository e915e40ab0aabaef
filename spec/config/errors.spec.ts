import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { parseConfig, type ConfigProblem } from '../../src/config/index.js';
import { editDistance, formatPath, pointerToSegments, suggest } from '../../src/config/problems.js';
import { BASE, problems, rejection } from './helpers.js';

test('the base config of these specs is valid', () => {
  parseConfig(BASE, 'llmgw.yaml', {});
});

test('a number below its minimum: file, path inside it, reason', () => {
  const text = BASE.replace('tp: 1', 'tp: 0');
  assert.equal(problems(text), ['llmgw.yaml: models[2].profiles[0].tp: must be ≥ 1']);
});

test('a value outside an enum lists the allowed values', () => {
  const text = BASE.replace('gpu_class: h100-80g', 'gpu_class: h100-80g\n        engine: vlm');
  assert.equal(problems(text), ['llmgw.yaml: models[2].profiles[0].engine: must be one of vllm, sglang']);
});

test('a missing required key is reported at the key', () => {
  const text = BASE.replace('  - name: llama-3.3-70b\n    aliases: [llama]\n', '  - aliases: [llama]\n');
  // Without its name the model is gone from the catalog, so what named it is reported too.
  assert.equal(problems(text), [
    "llmgw.yaml: endpoints[0].models[1]: 'llama-3.3-70b' is not a model in the catalog",
    "llmgw.yaml: models[0].fallbacks[0]: 'llama-3.3-70b' is not a model in the catalog",
    'llmgw.yaml: models[1].name: is required',
  ]);
});

test('an unknown key names the likely intent', () => {
  const text = BASE.replace('aliases: [llama-8b]', 'aliasses: [llama-8b]');
  assert.equal(problems(text), ["llmgw.yaml: models[0]: unknown key 'aliasses' (did you mean 'aliases'?)"]);
});

test('an unknown key with no close match lists the known keys', () => {
  assert.equal(problems(BASE + 'router:\n  turbo: true\n'), [
    "llmgw.yaml: router: unknown key 'turbo' (known keys: max_body_bytes, connect_timeout_ms, first_token_timeout_ms, idle_timeout_ms, poll_interval_ms, load_refresh_ms, stale_after_ms, default_profile, profiles, admission, retries, cooldown, breaker, prefix)",
  ]);
});

test('an unknown key at the top level has no path', () => {
  assert.equal(problems(BASE + 'modles: []\n'), ["llmgw.yaml: unknown key 'modles' (did you mean 'models'?)"]);
});

test('a wrong type says what was expected and what was found', () => {
  assert.equal(problems(BASE + 'router:\n  max_body_bytes: abc\n'), ['llmgw.yaml: router.max_body_bytes: must be an integer, got "abc"']);
  assert.equal(problems(BASE.replace('tp: 1', 'tp: 1.5')), ['llmgw.yaml: models[2].profiles[0].tp: must be an integer, got 1.5']);
  assert.equal(problems(BASE + 'admin_token: 12345\n'), ['llmgw.yaml: admin_token: must be a string, got 12345']);
  assert.equal(problems(BASE.replace('  - model: llama-3.1-8b', '  - model: llama-3.1-8b\n    speed: fast')), ['llmgw.yaml: simulate[0].speed: must be a number, got "fast"']);
  assert.equal(problems(BASE.replace('aliases: [llama]', 'aliases: llama')), ['llmgw.yaml: models[1].aliases: must be a list, got "llama"']);
  assert.equal(problems(BASE + 'router: 5\n'), ['llmgw.yaml: router: must be a mapping, got 5']);
  assert.equal(problems('- listen: x\n'), ['llmgw.yaml: must be a mapping, got [{"listen":"x"}]']);
});

test('exclusive minimums, maximums, empty strings and empty lists', () => {
  const text = BASE.replace('    models: [llama-3.1-8b, llama-3.3-70b]', '    models: []\n    weight: 0\n  - id: ""\n    url: http://10.0.0.6:8000\n    models: [llama-3.3-70b]');
  assert.equal(problems(text + 'runtime:\n  ask_timeout_ms: 2147483648\n'), [
    // llama-3.3-70b is still served by endpoints[1], so only the list itself is reported.
    'llmgw.yaml: endpoints[0].models: must list at least one entry',
    'llmgw.yaml: endpoints[0].weight: must be > 0',
    'llmgw.yaml: endpoints[1].id: must not be empty',
    'llmgw.yaml: runtime.ask_timeout_ms: must be ≤ 2147483647',
  ]);
});

test('addresses must be HOST:PORT, with a real port, and the two ports must differ', () => {
  assert.equal(problems(BASE.replace('listen: "127.0.0.1:4000"', 'listen: localhost')), ['llmgw.yaml: listen: must be HOST:PORT (e.g. 127.0.0.1:4000), got "localhost"']);
  assert.equal(problems(BASE.replace('listen: "127.0.0.1:4000"', 'listen: "127.0.0.1:70000"')), [
    'llmgw.yaml: listen: must be HOST:PORT (e.g. 127.0.0.1:4000), got "127.0.0.1:70000" (ports go up to 65535)',
  ]);
  assert.equal(problems(BASE + 'admin_listen: "0.0.0.0:4000"\nadmin_token: t\n'), ['llmgw.yaml: admin_listen: must differ from listen (both use port 4000)']);
  assert.equal(problems(BASE.replace('127.0.0.1:4000', '[::]:4000') + 'admin_listen: "10.0.0.1:4000"\nadmin_token: t\n'), ['llmgw.yaml: admin_listen: must differ from listen (both use port 4000)'], 'the IPv6 wildcard covers every address');
  // Port 0 picks a free port for each, so both may ask for it.
  parseConfig(BASE.replace('127.0.0.1:4000', '127.0.0.1:0') + 'admin_listen: "127.0.0.1:0"\n', 'llmgw.yaml', {});
  parseConfig(BASE.replace('127.0.0.1:4000', '[::1]:4000') + 'admin_listen: ":4001"\nadmin_token: t\n', 'llmgw.yaml', {});
});

test('an admin port off loopback needs a token: the admin API drains nodes and reloads the config', () => {
  assert.equal(problems(BASE + 'admin_listen: "0.0.0.0:4001"\n'), [
    'llmgw.yaml: admin_token: is required: admin_listen 0.0.0.0:4001 is not a loopback address, and the admin API drains nodes, reloads the config and reads usage; set admin_token, or bind admin_listen to 127.0.0.1',
  ]);
  parseConfig(BASE + 'admin_listen: "[::1]:4001"\n', 'llmgw.yaml', {});
  parseConfig(BASE + 'admin_listen: "0.0.0.0:4001"\nadmin_token: s3cret\n', 'llmgw.yaml', {});
});

test('endpoint urls must be http(s) URLs', () => {
  assert.equal(problems(BASE.replace('http://10.0.0.5:8000', 'ftp://10.0.0.5')), ['llmgw.yaml: endpoints[0].url: must be an http(s) URL (e.g. http://10.0.0.5:8000), got "ftp://10.0.0.5"']);
  assert.equal(problems(BASE.replace('http://10.0.0.5:8000', 'http://10.0.0.5:99999')), [
    'llmgw.yaml: endpoints[0].url: must be an http(s) URL (e.g. http://10.0.0.5:8000), got "http://10.0.0.5:99999"',
  ]);
});

test('a duplicate model name is reported where it repeats', () => {
  const text = BASE.replace('  - name: qwen2.5-32b', '  - name: llama-3.1-8b');
  assert.equal(problems(text), ["llmgw.yaml: models[2].name: 'llama-3.1-8b' is already taken by models[0].name"]);
});

test('aliases share one namespace with names', () => {
  assert.equal(problems(BASE.replace('aliases: [llama]', 'aliases: [llama-3.1-8b]')), [
    // llama-3.1-8b falls back to llama-3.3-70b by name, which is still fine.
    "llmgw.yaml: models[1].aliases[0]: 'llama-3.1-8b' is already taken by models[0].name",
  ]);
  assert.equal(problems(BASE.replace('aliases: [llama]', 'aliases: [llama-8b]')), ["llmgw.yaml: models[1].aliases[0]: 'llama-8b' is already taken by models[0].aliases[0]"]);
  assert.equal(problems(BASE.replace('aliases: [llama]', 'aliases: [llama, llama]')), ["llmgw.yaml: models[1].aliases[1]: 'llama' is already taken by models[1].aliases[0]"]);
  assert.equal(problems(BASE.replace('aliases: [llama]', 'aliases: [llama-3.3-70b]')), ["llmgw.yaml: models[1].aliases[0]: 'llama-3.3-70b' is the model's own name"]);
  // An alias colliding with a later model's name is reported at the alias.
  assert.equal(problems(BASE.replace('aliases: [llama-8b]', 'aliases: [qwen2.5-32b]')), ["llmgw.yaml: models[0].aliases[0]: 'qwen2.5-32b' is already taken by models[2].name"]);
});

test('fallbacks must name another model of the catalog, by name or alias', () => {
  assert.equal(problems(BASE.replace('fallbacks: [llama-3.3-70b]', 'fallbacks: [llama-3.3-7b]')), [
    "llmgw.yaml: models[0].fallbacks[0]: 'llama-3.3-7b' is not a model in the catalog (did you mean 'llama-3.3-70b'?)",
  ]);
  assert.equal(problems(BASE.replace('fallbacks: [llama-3.3-70b]', 'fallbacks: [llama-8b]')), ["llmgw.yaml: models[0].fallbacks[0]: 'llama-8b' is this model itself"]);
  parseConfig(BASE.replace('fallbacks: [llama-3.3-70b]', 'fallbacks: [llama, qwen2.5-32b]'), 'llmgw.yaml', {});
});

test('endpoints and simulate entries must name catalog models, by name', () => {
  assert.equal(problems(BASE.replace('models: [llama-3.1-8b, llama-3.3-70b]', 'models: [llama-3.1-8b, llama-3.3-70b, mistral]')), [
    "llmgw.yaml: endpoints[0].models[2]: 'mistral' is not a model in the catalog",
  ]);
  assert.equal(problems(BASE.replace('models: [llama-3.1-8b, llama-3.3-70b]', 'models: [llama-3.1-8b, llama]')), [
    "llmgw.yaml: endpoints[0].models[1]: 'llama' is an alias of 'llama-3.3-70b'; name the model itself",
  ]);
  assert.equal(problems(BASE + '  - model: llama-3.1-8\n'), ["llmgw.yaml: simulate[1].model: 'llama-3.1-8' is not a model in the catalog (did you mean 'llama-3.1-8b'?)"]);
});

test('endpoint ids and profile names must be unique', () => {
  const twoEndpoints = BASE.replace('simulate:', '  - id: gpu-a-0\n    url: http://10.0.0.6:8000\n    models: [llama-3.1-8b]\nsimulate:');
  assert.equal(problems(twoEndpoints), ["llmgw.yaml: endpoints[1].id: 'gpu-a-0' is already taken by endpoints[0].id"]);
  const twoProfiles = BASE.replace('        tp: 1\n', '        tp: 1\n      - name: h100-tp1\n        gpu_class: a100-80g\n        tp: 2\n');
  assert.equal(problems(twoProfiles), ["llmgw.yaml: models[2].profiles[1].name: 'h100-tp1' is already taken by models[2].profiles[0].name"]);
});

test('a model nothing can serve is an error; profiles, an endpoint or a simulate entry each make it servable', () => {
  const text = BASE.replace('endpoints:', '  - name: mistral-7b\nendpoints:');
  assert.equal(problems(text), ["llmgw.yaml: models[3]: 'mistral-7b' cannot be served: give it profiles, or name it in an endpoint or a simulate entry"]);
  // llama-3.1-8b: endpoint and simulate; llama-3.3-70b: endpoint only; qwen2.5-32b: profiles only.
  parseConfig(BASE, 'llmgw.yaml', {});
  parseConfig(text + '  - model: mistral-7b\n', 'llmgw.yaml', {});
  parseConfig(text.replace('models: [llama-3.1-8b, llama-3.3-70b]', 'models: [llama-3.1-8b, llama-3.3-70b, mistral-7b]'), 'llmgw.yaml', {});
  parseConfig(text.replace('  - name: mistral-7b\n', '  - name: mistral-7b\n    profiles: [{ name: p, gpu_class: l40s, tp: 1 }]\n'), 'llmgw.yaml', {});
});

test('routing profiles: unknown names in a model or the default, and duplicates, are refused with the known ones', () => {
  const text = `${BASE.replace('    aliases: [llama-8b]\n', '    aliases: [llama-8b]\n    routing_profile: chatt\n')}router:
  default_profile: nightly
  profiles:
    - name: sticky
      scorers: { session: 1 }
    - name: sticky
`;
  assert.equal(problems(text), [
    "llmgw.yaml: models[0].routing_profile: 'chatt' is not a routing profile (did you mean 'chat'?); have: chat, batch, long-context, sticky",
    "llmgw.yaml: router.default_profile: 'nightly' is not a routing profile; have: chat, batch, long-context, sticky",
    "llmgw.yaml: router.profiles[1].name: 'sticky' is already taken by router.profiles[0].name",
  ]);
  const bands = `${BASE}router:\n  admission:\n    default_band: platinium\n    bands: [{ name: gold }, { name: gold }]\n  profiles:\n    - name: nightly\n      band: bronze\n`;
  assert.equal(problems(bands), [
    "llmgw.yaml: router.admission.bands[1].name: 'gold' is already taken by router.admission.bands[0].name",
    "llmgw.yaml: router.admission.default_band: 'platinium' is not an admission band; have: gold",
    "llmgw.yaml: router.profiles[0].band: 'bronze' is not an admission band; have: gold",
  ]);
  assert.equal(problems(`${BASE}router:\n  admission:\n    default_band: platinium\n`), [
    "llmgw.yaml: router.admission.default_band: 'platinium' is not an admission band (did you mean 'platinum'?); have: platinum, gold, silver, bronze",
  ]);
  const typo = `${BASE}router:\n  profiles:\n    - name: p\n      scorers: { prefx: 1 }\n`;
  assert.equal(problems(typo), ["llmgw.yaml: router.profiles[0].scorers: unknown key 'prefx' (did you mean 'prefix'?)"]);
});

test('every problem is reported at once, one per line, sorted by path with indices in numeric order', () => {
  let models = '';
  for (let i = 0; i < 12; i++) models += `  - name: m${i}\n    profiles: [{ name: p, gpu_class: g, tp: 1 }]\n`;
  models = models.replace('  - name: m2\n    profiles: [{ name: p, gpu_class: g, tp: 1 }]', '  - name: m2\n    profiles: [{ name: p, gpu_class: g, tp: 0 }]');
  models = models.replace('  - name: m10\n', '  - name: m10\n    max_model_len: 0\n');
  const text = `agent_insecure: true\nlog_level: loud\nlisten: nope\nmodels:\n${models}simulate:\n  - model: m1\n    flavor: trt\nrouter:\n  poll_interval_ms: -5\n`;
  assert.equal(problems(text), [
    'llmgw.yaml: listen: must be HOST:PORT (e.g. 127.0.0.1:4000), got "nope"',
    'llmgw.yaml: log_level: must be one of debug, info, warn, error, silent',
    'llmgw.yaml: models[2].profiles[0].tp: must be ≥ 1',
    'llmgw.yaml: models[10].max_model_len: must be ≥ 1',
    'llmgw.yaml: router.poll_interval_ms: must be ≥ 1',
    'llmgw.yaml: simulate[0].flavor: must be one of vllm, sglang',
  ]);
});

test('the error carries each problem as data, with its line and column in the file', () => {
  const e = rejection(BASE.replace('tp: 1', 'tp: 0').replace('aliases: [llama-8b]', 'aliasses: [llama-8b]'));
  const list = e.details?.problems as ConfigProblem[];
  assert.equal(list, [
    { source: 'llmgw.yaml', path: 'models[0]', message: "unknown key 'aliasses' (did you mean 'aliases'?)", line: 6, column: 5 },
    { source: 'llmgw.yaml', path: 'models[2].profiles[0].tp', message: 'must be ≥ 1', line: 14, column: 13 },
  ]);
});

test('a YAML syntax error gives the line and column', () => {
  assert.equal(problems('listen: "127.0.0.1:4000"\nmodels:\n  - name: [a\n'), ['llmgw.yaml: line 4, column 1: Flow sequence in block collection must be sufficiently indented and end with a ]']);
  assert.equal(problems('listen: "127.0.0.1:4000"\nlog_level: info\nlisten: ":5000"\n'), ['llmgw.yaml: line 3, column 1: Map keys must be unique']);
  assert.equal(problems('router:\n\tmax_body_bytes: 1\n'), ['llmgw.yaml: line 2, column 1: Tabs are not allowed as indentation']);
});

test('ajv pointers become readable paths', () => {
  assert.equal(pointerToSegments('/models/2/profiles/0/tp'), ['models', 2, 'profiles', 0, 'tp']);
  assert.is(formatPath(pointerToSegments('/models/2/profiles/0/tp')), 'models[2].profiles[0].tp');
  assert.is(formatPath(pointerToSegments('/a~1b/0')), '["a/b"][0]');
  assert.is(formatPath([]), '');
});

test('suggestions come only from close matches', () => {
  assert.is(editDistance('aliasses', 'aliases'), 1);
  assert.is(editDistance('fallbakcs', 'fallbacks'), 1); // a swap is one edit
  assert.is(suggest('aliasses', ['name', 'aliases', 'fallbacks']), 'aliases');
  assert.is(suggest('Name', ['name', 'aliases']), 'name');
  assert.is(suggest('x', ['a', 'b']), undefined);
  assert.is(suggest('turbo', ['tp', 'pp', 'nodes']), undefined);
  assert.is(suggest('llama-3.3-70b', ['llama-3.1-8b']), undefined);
  assert.is(suggest('llama-3.3-7b', ['llama-3.1-8b', 'llama-3.3-70b']), 'llama-3.3-70b');
});

test.run();
