// Turning what is wrong with a config into lines an operator can act on:
// `llmgw.yaml: models[2].profiles[0].tp: must be ≥ 1`. ajv's errors are rewritten into
// plain words here, and every check (schema, cross-reference, environment) reports
// through the same shape so one sort and one format cover them all.

import type { ErrorObject } from 'ajv';
import { ENV_NAME_PATTERN, HOST_PORT_PATTERN, HTTP_URL_PATTERN, NODE_NAME_PATTERN, RETIRED_KEYS, type SchemaNode } from './schema.js';
import type { ConfigProblem } from './types.js';

export type Segment = string | number;

/** A problem located in the config data, before it is attributed to the file, a variable or a flag. */
export interface RawProblem {
  segments: Segment[];
  message: string;
  /** For an unknown key: the key, so the YAML location can point at it. */
  key?: string;
}

export const HOST_PORT_MESSAGE = 'must be HOST:PORT (e.g. 127.0.0.1:4000)';
export const URL_MESSAGE = 'must be an http(s) URL (e.g. http://10.0.0.5:8000)';

const TYPE_WORDS: Record<string, string> = {
  integer: 'an integer',
  number: 'a number',
  string: 'a string',
  array: 'a list',
  object: 'a mapping',
  boolean: 'true or false',
  null: 'empty',
};

/** `models[2].profiles[0].tp` for ['models', 2, 'profiles', 0, 'tp']. */
export function formatPath(segments: readonly Segment[]): string {
  let out = '';
  for (const s of segments) {
    if (typeof s === 'number') out += `[${s}]`;
    else if (/^[A-Za-z_$][\w$-]*$/.test(s)) out += out === '' ? s : `.${s}`;
    else out += `[${JSON.stringify(s)}]`;
  }
  return out;
}

/** ajv's `/models/2/profiles/0/tp` as segments; all-digit segments are list indices. */
export function pointerToSegments(pointer: string): Segment[] {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((raw) => {
      const s = raw.replace(/~1/g, '/').replace(/~0/g, '~');
      return /^(0|[1-9]\d*)$/.test(s) ? Number(s) : s;
    });
}

export function segmentsKey(segments: readonly Segment[]): string {
  return segments.map((s) => `/${String(s).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');
}

/** The line a problem prints as. */
export function formatProblem(p: ConfigProblem): string {
  return p.path === '' ? `${p.source}: ${p.message}` : `${p.source}: ${p.path}: ${p.message}`;
}

/** A value as the operator wrote it, short enough for one line. */
export function show(value: unknown): string {
  if (value === undefined) return 'nothing';
  let s: string;
  try {
    s = JSON.stringify(value) ?? String(value);
  } catch {
    s = String(value);
  }
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

/** Optimal string alignment distance: edits, counting a swap of neighbours as one. */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1);
      d[i]![j] = v;
    }
  }
  return d[a.length]![b.length]!;
}

/** The closest candidate, if it is close enough to be the likely intent. */
export function suggest(word: string, candidates: Iterable<string>): string | undefined {
  const w = word.toLowerCase();
  // At most two edits, fewer for short words: model names like llama-3.1-8b and
  // llama-3.3-70b differ in a few characters that matter, and must not be confused.
  const limit = Math.min(2, Math.max(1, Math.floor(w.length / 3)));
  let best: string | undefined;
  let bestD = Infinity;
  for (const c of candidates) {
    const d = editDistance(w, c.toLowerCase());
    // A one-letter word is one edit from every other one-letter word: not a suggestion.
    if (d < bestD && d <= limit && d < Math.min(w.length, c.length)) {
      best = c;
      bestD = d;
    }
  }
  return best;
}

export function didYouMean(word: string, candidates: Iterable<string>): string {
  const s = suggest(word, candidates);
  return s === undefined ? '' : ` (did you mean '${s}'?)`;
}

/** One ajv error in plain words. Needs ajv's `verbose: true` for `data` and `parentSchema`. */
export function fromAjvError(e: ErrorObject): RawProblem {
  const segments = pointerToSegments(e.instancePath);
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'required':
      return { segments: [...segments, String(p.missingProperty)], message: 'is required' };
    case 'additionalProperties': {
      const key = String(p.additionalProperty);
      const retired = RETIRED_KEYS.get(e.parentSchema as SchemaNode)?.[key];
      if (retired !== undefined) return { segments, key, message: `'${key}' is no longer a key here: ${retired}` };
      const known = Object.keys((e.parentSchema as { properties?: Record<string, unknown> } | undefined)?.properties ?? {});
      const hint = suggest(key, known);
      const tail = hint !== undefined ? ` (did you mean '${hint}'?)` : known.length > 0 ? ` (known keys: ${known.join(', ')})` : '';
      return { segments, key, message: `unknown key '${key}'${tail}` };
    }
    case 'type': {
      const types = String(p.type).split(',');
      const words = types.map((t) => TYPE_WORDS[t] ?? t).join(' or ');
      return { segments, message: `must be ${words}, got ${show(e.data)}` };
    }
    case 'oneOf': {
      const shapes = ((e.parentSchema as SchemaNode | undefined)?.oneOf ?? []).map((b) => b.description);
      return { segments, message: `must be ${shapes.join(', or ')}, got ${show(e.data)}` };
    }
    case 'enum':
      return { segments, message: `must be one of ${(p.allowedValues as unknown[]).map(String).join(', ')}` };
    case 'minimum':
      return { segments, message: `must be ≥ ${String(p.limit)}` };
    case 'maximum':
      return { segments, message: `must be ≤ ${String(p.limit)}` };
    case 'exclusiveMinimum':
      return { segments, message: `must be > ${String(p.limit)}` };
    case 'exclusiveMaximum':
      return { segments, message: `must be < ${String(p.limit)}` };
    case 'minLength':
      return { segments, message: p.limit === 1 ? 'must not be empty' : `must be at least ${String(p.limit)} characters long` };
    case 'minItems':
    case 'maxItems': {
      const exact = (e.parentSchema as SchemaNode | undefined)?.minItems === (e.parentSchema as SchemaNode | undefined)?.maxItems;
      if (exact) return { segments, message: `must list exactly ${String(p.limit)} entries, got ${show(e.data)}` };
      if (e.keyword === 'maxItems') return { segments, message: `must list at most ${String(p.limit)} entries` };
      return { segments, message: p.limit === 1 ? 'must list at least one entry' : `must list at least ${String(p.limit)} entries` };
    }
    case 'propertyNames': {
      const key = String(p.propertyName);
      const pattern = (e.parentSchema as SchemaNode | undefined)?.propertyNames?.pattern;
      const why = pattern === ENV_NAME_PATTERN ? 'is not an environment variable name (letters, digits and _, not starting with a digit)' : `is not a valid key (must match ${String(pattern)})`;
      return { segments: [...segments, key], message: why };
    }
    case 'pattern':
      if (p.pattern === HOST_PORT_PATTERN) return { segments, message: `${HOST_PORT_MESSAGE}, got ${show(e.data)}` };
      if (p.pattern === HTTP_URL_PATTERN) return { segments, message: `${URL_MESSAGE}, got ${show(e.data)}` };
      if (p.pattern === NODE_NAME_PATTERN) return { segments, message: `must be a host name (letters, digits, '.', '_' and '-', starting and ending with a letter or digit), got ${show(e.data)}` };
      return { segments, message: `must match ${String(p.pattern)}, got ${show(e.data)}` };
    default:
      return { segments, message: e.message ?? `fails ${e.keyword}` };
  }
}

function compareSegments(a: readonly Segment[], b: readonly Segment[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x === y) continue;
    if (typeof x === 'number' && typeof y === 'number') return x - y;
    if (typeof x === 'number') return -1;
    if (typeof y === 'number') return 1;
    return x < y ? -1 : 1;
  }
  return a.length - b.length;
}

/** Sorted by rank (file, environment, flags), then by path (list indices in numeric order), without repeats. */
export function sortProblems<T extends { problem: ConfigProblem; segments: readonly Segment[]; rank: number }>(items: T[]): ConfigProblem[] {
  items.sort(
    (a, b) =>
      a.rank - b.rank ||
      (a.rank === 0 ? compareSegments(a.segments, b.segments) : a.problem.source < b.problem.source ? -1 : a.problem.source > b.problem.source ? 1 : 0) ||
      (a.problem.message < b.problem.message ? -1 : a.problem.message > b.problem.message ? 1 : 0),
  );
  const seen = new Set<string>();
  const out: ConfigProblem[] = [];
  for (const { problem } of items) {
    const line = formatProblem(problem);
    if (seen.has(line)) continue;
    seen.add(line);
    out.push(problem);
  }
  return out;
}
