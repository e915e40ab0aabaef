// The dashboard and the alert rules query metrics by name; a renamed metric or label
// leaves a panel empty and an alert silent, and nothing else would notice. This spec
// starts a real server, makes every labelled metric the files use carry series (a retry,
// a fallback, a streamed and a refused request), scrapes /metrics and checks every
// PromQL expression of both files against what it exports.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { suite } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { request } from 'undici';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { DEFAULT_CONFIG_YAML } from '../../src/config/default.js';
import { startProcess, type Started } from '../support/process.js';
import { until } from '../support/until.js';
import { isQueryable, parseExposition, type Exposition } from './exposition.js';
import { PROMQL_FUNCTIONS, expandGrafanaVariables, promqlRefs } from './promql.js';
import { repoFile } from './repo.js';

/** Labels Prometheus attaches to every series it scrapes. */
const TARGET_LABELS = new Set(['instance', 'job']);

interface Query {
  readonly where: string;
  readonly expr: string;
  /** `{{ $labels.x }}` in an alert's annotations, or the label a variable lists. */
  readonly uses?: readonly string[];
}

/** What is wrong with one query against the exported metrics; empty when nothing. */
function problemsOf(q: Query, exp: Exposition): string[] {
  const out: string[] = [];
  const refs = promqlRefs(expandGrafanaVariables(q.expr));
  if (refs.metrics.size === 0) out.push(`${q.where}: reads no metric`);
  for (const f of refs.functions) if (!PROMQL_FUNCTIONS.has(f)) out.push(`${q.where}: '${f}' is not a PromQL function`);
  const labelsOf = (metric: string): ReadonlySet<string> | undefined => exp.series.get(metric);
  const known = new Set<string>(TARGET_LABELS);
  for (const m of refs.metrics) {
    if (!isQueryable(exp, m)) out.push(`${q.where}: '${m}' is not a metric the server exports`);
    for (const l of labelsOf(m) ?? []) known.add(l);
  }
  for (const { metric, label } of refs.matchers) {
    if (TARGET_LABELS.has(label)) continue;
    const labels = labelsOf(metric);
    if (labels === undefined) out.push(`${q.where}: '${metric}' has no series to check the label '${label}' against`);
    else if (!labels.has(label)) out.push(`${q.where}: '${metric}' has no label '${label}' (it has ${[...labels].join(', ') || 'none'})`);
  }
  for (const label of [...refs.grouping, ...(q.uses ?? [])]) {
    if (!known.has(label)) out.push(`${q.where}: no metric it reads has the label '${label}'`);
  }
  return out;
}

interface Panel {
  title?: string;
  targets?: { refId?: string; expr?: string }[];
  panels?: Panel[];
}

function dashboardQueries(): Query[] {
  const d = JSON.parse(readFileSync(repoFile('deploy/grafana/llmgw.json'), 'utf8')) as {
    panels: Panel[];
    templating: { list: { name: string; type: string; query: unknown }[] };
  };
  const out: Query[] = [];
  const walk = (panels: Panel[]): void => {
    for (const p of panels) {
      for (const t of p.targets ?? []) out.push({ where: `dashboard panel '${p.title}' ${t.refId}`, expr: t.expr ?? '' });
      walk(p.panels ?? []);
    }
  };
  walk(d.panels);
  for (const v of d.templating.list) {
    if (v.type !== 'query') continue;
    const text = typeof v.query === 'string' ? v.query : (v.query as { query: string }).query;
    // Grafana's label_values(selector, label): the selector is PromQL, the label must be on it.
    const lv = /^label_values\((.+),\s*([a-zA-Z_]\w*)\)$/.exec(text);
    if (!lv) throw new Error(`dashboard variable ${v.name}: expected label_values(selector, label), got ${text}`);
    out.push({ where: `dashboard variable $${v.name}`, expr: lv[1]!, uses: [lv[2]!] });
  }
  return out;
}

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

/** The rule file's structure as Prometheus requires it, then its rules. */
function alertRules(): Rule[] {
  const path = repoFile('deploy/prometheus/llmgw-alerts.yml');
  const doc = parseYaml(readFileSync(path, 'utf8')) as unknown;
  const fail = (where: string, why: string): never => assert.unreachable(`${path}: ${where}: ${why}`) as never;
  const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  const onlyKeys = (o: Record<string, unknown>, keys: string[], where: string): void => {
    for (const k of Object.keys(o)) if (!keys.includes(k)) fail(where, `unknown key '${k}'`);
  };
  if (!isObj(doc) || !Array.isArray(doc.groups) || doc.groups.length === 0) return fail('groups', 'must be a non-empty list');
  onlyKeys(doc, ['groups'], 'top level');
  const groupNames = new Set<string>();
  const alertNames = new Set<string>();
  const rules: Rule[] = [];
  doc.groups.forEach((g: unknown, gi) => {
    const at = `groups[${gi}]`;
    if (!isObj(g) || typeof g.name !== 'string' || g.name === '') return fail(at, 'needs a name');
    onlyKeys(g, ['name', 'interval', 'limit', 'rules'], at);
    if (groupNames.has(g.name)) fail(at, `group name '${g.name}' repeats`);
    groupNames.add(g.name);
    if (!Array.isArray(g.rules) || g.rules.length === 0) return fail(at, 'rules must be a non-empty list');
    g.rules.forEach((r: unknown, ri) => {
      const where = `${at}.rules[${ri}]`;
      if (!isObj(r)) return fail(where, 'must be a mapping');
      onlyKeys(r, ['alert', 'expr', 'for', 'keep_firing_for', 'labels', 'annotations'], where);
      if (typeof r.alert !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(r.alert)) return fail(where, 'alert must be a name');
      if (alertNames.has(r.alert)) fail(where, `alert '${r.alert}' repeats`);
      alertNames.add(r.alert);
      if (typeof r.expr !== 'string' || r.expr.trim() === '') return fail(where, 'expr must be a PromQL string');
      if (r.for !== undefined && (typeof r.for !== 'string' || !/^(\d+(ms|s|m|h|d|w|y))+$/.test(r.for))) fail(where, `for: not a duration: ${String(r.for)}`);
      for (const k of ['labels', 'annotations'] as const) {
        if (!isObj(r[k]) || !Object.values(r[k]).every((v) => typeof v === 'string')) fail(where, `${k} must map names to strings`);
      }
      const rule = r as unknown as Rule;
      if (!['critical', 'warning', 'info'].includes(rule.labels.severity ?? '')) fail(where, 'labels.severity must be critical, warning or info');
      if (!rule.annotations.summary || !rule.annotations.description) fail(where, 'annotations need a summary and a description');
      rules.push(rule);
    });
  });
  return rules;
}

function ruleQueries(): Query[] {
  return alertRules().map((r) => ({
    where: `alert ${r.alert}`,
    expr: r.expr,
    uses: Object.values(r.annotations).flatMap((a) => [...a.matchAll(/\$labels\.([a-zA-Z_]\w*)/g)].map((m) => m[1]!)),
  }));
}

// ---- the server -------------------------------------------------------------------

const test = suite('the dashboard and the alert rules read metrics the server exports');
const dir = mkdtempSync(join(tmpdir(), 'llmgw-monitoring-'));
let server: Started;
let faulty: Server;
let url: string;
let admin: string;
let exposition: Exposition;

/** An engine that is ready by every probe and fails every request, so the router retries. */
function startFaultyEngine(): Promise<string> {
  faulty = createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/health') return void res.end();
    if (req.method === 'GET' && req.url === '/v1/models') {
      return void res.setHeader('content-type', 'application/json').end(JSON.stringify({ object: 'list', data: [{ id: 'llmgw-sim', object: 'model' }] }));
    }
    if (req.method === 'GET' && req.url === '/metrics') return void res.end('');
    req.resume();
    res.statusCode = 500;
    res.setHeader('content-type', 'application/json').end(JSON.stringify({ error: { message: 'engine failure', type: 'server_error' } }));
  });
  return new Promise((resolve) => faulty.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(faulty.address() as { port: number }).port}`)));
}

async function metricsText(): Promise<string> {
  const res = await request(`${admin}/metrics`);
  assert.is(res.statusCode, 200);
  return res.body.text();
}

async function chat(model: string, stream = false): Promise<number> {
  const res = await request(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hello' }], max_tokens: 2, stream }),
  });
  await res.body.dump();
  return res.statusCode;
}

test.before(async () => {
  const engine = await startFaultyEngine();
  // The embedded default (its simulated fleet), plus what makes retries and fallbacks
  // happen: an engine that fails every request ahead of the placed replicas, and a model
  // whose only endpoint never lists it, with a fallback to the simulated model.
  const config = parseYaml(DEFAULT_CONFIG_YAML) as { models: object[]; [k: string]: unknown };
  Object.assign(config, { listen: '127.0.0.1:0', admin_listen: '127.0.0.1:0', agent_listen: '127.0.0.1:0', router: { poll_interval_ms: 100 } });
  config.models.push({ name: 'unlisted', fallbacks: ['llmgw-sim'] });
  config.endpoints = [
    { id: 'faulty', url: engine, models: ['llmgw-sim'], priority: 1 },
    { id: 'unlisted-0', url: engine, models: ['unlisted'] },
  ];
  const path = join(dir, 'llmgw.yaml');
  writeFileSync(path, stringifyYaml(config));
  server = await startProcess(['run', '--role=server', '--config', path], { waitFor: /listening on (\S+) \(admin (\S+)\)/ });
  url = server.match[1]!;
  admin = server.match[2]!;
  await until(async () => {
    const t = await metricsText();
    // The placed replicas' ids are the control plane's: llmgw-sim-<suffix>.
    const placed = [...t.matchAll(/llmgw_endpoint_ready\{endpoint="(llmgw-sim-[^"]+)"\} 1/g)].map((m) => m[1]!);
    const ready = placed.length === 2 && t.includes('llmgw_endpoint_ready{endpoint="faulty"} 1');
    return ready && placed.every((e) => t.includes(`llmgw_endpoint_scrape_age_seconds{endpoint="${e}"}`));
  }, 'every endpoint but unlisted-0 ready and the placed replicas scraped', 20_000);

  assert.is(await chat('sim'), 200, 'retried from the faulty engine onto a simulated one');
  assert.is(await chat('llmgw-sim', true), 200);
  assert.is(await chat('unlisted'), 200, 'served by its fallback');
  assert.is(await chat('no-such-model'), 404);
  // Request metrics are drawn from usage records, which reach the telemetry thread in batches.
  await until(async () => {
    exposition = parseExposition(await metricsText());
    return ['llmgw_retries_total', 'llmgw_fallbacks_total', 'llmgw_request_ttft_seconds_bucket'].every((name) => exposition.series.has(name));
  }, 'the requests counted in /metrics');
  for (const name of ['llmgw_retries_total', 'llmgw_fallbacks_total', 'llmgw_request_ttft_seconds_bucket']) {
    assert.ok(exposition.series.has(name), `${name} has series to check labels against`);
  }
});
test.after(async () => {
  await server?.stop();
  await new Promise((r) => faulty?.close(r));
  rmSync(dir, { recursive: true });
});

test('every dashboard query reads exported metrics by labels they have', () => {
  const queries = dashboardQueries();
  assert.ok(queries.length >= 30, `${queries.length} queries`);
  assert.equal(queries.flatMap((q) => problemsOf(q, exposition)), []);
});

test('every alert rule reads exported metrics by labels they have', () => {
  const queries = ruleQueries();
  assert.ok(queries.length >= 10, `${queries.length} rules`);
  assert.equal(queries.flatMap((q) => problemsOf(q, exposition)), []);
});

test('a misspelt metric, a label it lacks, a bare histogram and an unknown function are each caught', () => {
  const check = (expr: string, uses?: string[]): string[] => problemsOf({ where: 'q', expr, ...(uses ? { uses } : {}) }, exposition);
  assert.equal(check('rate(llmgw_request_total[5m])'), ["q: 'llmgw_request_total' is not a metric the server exports"]);
  assert.equal(check('rate(llmgw_requests_total{modle="x"}[5m])'), ["q: 'llmgw_requests_total' has no label 'modle' (it has model, endpoint, status)"]);
  assert.equal(check('llmgw_request_ttft_seconds'), ["q: 'llmgw_request_ttft_seconds' is not a metric the server exports"]);
  assert.equal(check('rat(llmgw_requests_total[5m])'), ["q: 'rat' is not a PromQL function"]);
  assert.equal(check('sum by (band) (rate(llmgw_retries_total[5m]))'), ["q: no metric it reads has the label 'band'"]);
  assert.equal(check('llmgw_endpoint_ready == 0', ['model']), ["q: no metric it reads has the label 'model'"]);
  assert.equal(check('histogram_quantile(0.99, sum by (le, model) (rate(llmgw_request_ttft_seconds_bucket{stream="true", instance=~"$instance"}[$__rate_interval]))) > 5'), []);
});

test('PromQL references are found past strings, durations, keywords and Grafana variables', () => {
  const r = promqlRefs(
    expandGrafanaVariables(
      'sum without (thread) (rate(a_total{x="b_total", y=~"$v"}[1h30m:1m] offset 5m)) / on (model) group_left max by (model) (b) unless {__name__="c"} and 2e-3 < bool inf',
    ),
  );
  assert.equal([...r.metrics].sort(), ['a_total', 'b', 'c']);
  assert.equal(r.matchers, [
    { metric: 'a_total', label: 'x' },
    { metric: 'a_total', label: 'y' },
  ]);
  assert.equal([...r.grouping].sort(), ['model', 'thread']);
  assert.equal([...r.functions].sort(), ['max', 'rate', 'sum']);
});

test.run();
