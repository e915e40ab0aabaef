// Loading a configuration: YAML text → data → environment and flag overrides → JSON
// Schema (ajv fills the defaults) → cross-reference checks and the files it names →
// the defaults that depend on other values (model-defaults.ts) and the tenancy store's path
// (from the config file's folder) → one frozen Config, or one
// LLMGW_CONFIG_INVALID error listing every problem, one per line, sorted by path.
// Precedence: schema defaults < file < LLMGW_* environment < CLI flags.

import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import { isMap, isScalar, isSeq, LineCounter, parseDocument, type Document } from 'yaml';
import { LlmgwError } from '../errors.js';
import { crossCheck } from './cross-check.js';
import { DEFAULT_CONFIG_SOURCE, DEFAULT_CONFIG_YAML } from './default.js';
import { readEnv } from './env.js';
import { fillModelDefaults } from './model-defaults.js';
import { formatPath, formatProblem, fromAjvError, segmentsKey, sortProblems, type RawProblem, type Segment } from './problems.js';
import { checkFiles, osReason } from './readable-files.js';
import { configSchema } from './schema.js';
import type { Config, ConfigOverrides, ConfigProblem } from './types.js';

export interface LoadConfigOptions {
  /** The YAML file. Unset: LLMGW_CONFIG from `env`, else the embedded default. */
  path?: string | undefined;
  /** Where LLMGW_* overrides are read from; process.env when unset. */
  env?: NodeJS.ProcessEnv | undefined;
  /** CLI flags; they win over the file and the environment. */
  overrides?: ConfigOverrides | undefined;
}

export interface ConfigCheck {
  /** The config, when there are no problems. */
  config: Config | undefined;
  problems: ConfigProblem[];
}

const FLAG_NAMES: Record<keyof ConfigOverrides, string> = { listen: '--listen', admin_listen: '--admin-listen' };

let validator: ValidateFunction | undefined;

function validate(data: unknown): RawProblem[] {
  validator ??= new Ajv({ allErrors: true, useDefaults: true, verbose: true, strict: true }).compile(configSchema);
  // A bad map key gives two errors, the key's own (carrying `propertyName`) and the map's
  // `propertyNames`; the map's names the key, so the other is dropped. A value of several
  // shapes fails each shape on its own; the `oneOf` error that says which shapes it may
  // take is the one that helps.
  return validator(data) ? [] : (validator.errors ?? []).filter((e) => e.propertyName === undefined && !e.schemaPath.includes('/oneOf/')).map(fromAjvError);
}

/** Reads, validates and freezes the configuration; throws LLMGW_CONFIG_UNREADABLE or LLMGW_CONFIG_INVALID. */
export function loadConfig(opts: LoadConfigOptions = {}): Config {
  const env = opts.env ?? process.env;
  const path = opts.path ?? (env.LLMGW_CONFIG || undefined);
  if (path === undefined) return parseConfig(DEFAULT_CONFIG_YAML, DEFAULT_CONFIG_SOURCE, env, opts.overrides);
  return parseConfig(readConfigFile(path), path, env, opts.overrides);
}

/** Validates YAML text; `source` names it in every problem (usually the file path). */
export function parseConfig(text: string, source: string, env: NodeJS.ProcessEnv = process.env, overrides: ConfigOverrides = {}): Config {
  const { config, problems } = checkConfig(text, source, env, overrides);
  if (config) return config;
  throw new LlmgwError('LLMGW_CONFIG_INVALID', problems.map(formatProblem).join('\n'), { problems });
}

/** Like parseConfig, but returns the problems instead of throwing. */
export function checkConfig(text: string, source: string, env: NodeJS.ProcessEnv = process.env, overrides: ConfigOverrides = {}): ConfigCheck {
  const fromEnv = readEnv(env);
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) {
    const syntax = doc.errors.map((e): ConfigProblem => {
      const { line, col } = lines.linePos(e.pos[0]);
      return { source, path: '', message: `line ${line}, column ${col}: ${firstLine(e.message)}`, line, column: col };
    });
    return { config: undefined, problems: [...syntax, ...fromEnv.problems] };
  }

  let data: unknown = doc.toJS({ maxAliasCount: 100 });
  if (data === null || data === undefined) data = {}; // an empty file: all defaults

  // Overrides land in the data before validation, and `origin` remembers which value
  // came from where, so a bad one is reported against its variable or flag.
  const origin = new Map<string, string>();
  const place = (segments: readonly Segment[], value: unknown, from: string): void => {
    let at: unknown = data;
    for (const s of segments.slice(0, -1)) {
      if (!isPlainObject(at)) return; // the file has a non-mapping here; the schema reports it
      if (at[s] === undefined) at[s] = {};
      at = at[s];
    }
    if (!isPlainObject(at)) return;
    at[segments[segments.length - 1]!] = value;
    origin.set(segmentsKey(segments), from);
  };
  for (const o of fromEnv.overrides) place(o.segments, o.value, `env ${o.name}`);
  for (const key of Object.keys(FLAG_NAMES) as (keyof ConfigOverrides)[]) {
    const v = overrides[key];
    if (v !== undefined) place([key], v, FLAG_NAMES[key]);
  }

  const raw = [...validate(data), ...crossCheck(data), ...checkFiles(data)];
  const items = raw.map((r) => {
    const from = origin.get(segmentsKey(r.segments));
    if (from !== undefined) return { problem: { source: from, path: '', message: r.message }, segments: r.segments, rank: from.startsWith('env ') ? 1 : 2 };
    return { problem: { source, path: formatPath(r.segments), message: r.message, ...locate(doc, lines, r) }, segments: r.segments, rank: 0 };
  });
  items.push(...fromEnv.problems.map((problem) => ({ problem, segments: [] as Segment[], rank: 1 })));
  const problems = sortProblems(items);
  if (problems.length > 0) return { config: undefined, problems };
  fillModelDefaults((data as { models: Parameters<typeof fillModelDefaults>[0] }).models);
  const tenancy = (data as { tenancy?: { store: string } }).tenancy;
  if (tenancy) tenancy.store = resolve(dirname(source), tenancy.store);
  return { config: deepFreeze(data) as Config, problems: [] };
}

/** The text of a config file; LLMGW_CONFIG_UNREADABLE with the reason in plain words. */
export function readConfigFile(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    const errno = (err as NodeJS.ErrnoException).code;
    throw new LlmgwError('LLMGW_CONFIG_UNREADABLE', `${path}: cannot read the config file: ${osReason(err)}`, { path, errno });
  }
}

/** The line and column in the file of the node a problem is about, or of its nearest ancestor. */
function locate(doc: Document, lines: LineCounter, r: RawProblem): { line?: number; column?: number } {
  let node: unknown = doc.contents;
  let offset: number | undefined = rangeStart(node);
  for (const s of r.segments) {
    const next: unknown = isMap(node) || isSeq(node) ? node.get(s, true) : undefined;
    if (next === undefined) break;
    node = next;
    offset = rangeStart(node) ?? offset;
  }
  if (r.key !== undefined && isMap(node)) {
    const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === r.key);
    offset = (pair && rangeStart(pair.key)) ?? offset;
  }
  if (offset === undefined) return {};
  const { line, col } = lines.linePos(offset);
  return { line, column: col };
}

function rangeStart(node: unknown): number | undefined {
  const range = (node as { range?: [number, number, number] } | null)?.range;
  return range ? range[0] : undefined;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const firstLine = (s: string): string => s.split('\n')[0]!.replace(/\s+at line \d+, column \d+:?$/, '');

function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null) {
    for (const k of Object.keys(v)) deepFreeze((v as Record<string, unknown>)[k]);
    Object.freeze(v);
  }
  return v;
}
