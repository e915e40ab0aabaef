// LLMGW_* environment overrides. Every scalar key outside a list has a variable: the
// path in upper case, nested keys joined by a double underscore (router.max_body_bytes
// is LLMGW_ROUTER__MAX_BODY_BYTES). Values are read as YAML scalars, so numbers and
// booleans work, except for string keys, which take the value verbatim (a token of
// digits stays a string). A variable that names no setting is an error: a typo in an
// environment variable must not be silently ignored.

import { parse as parseYaml } from 'yaml';
import { suggest, type Segment } from './problems.js';
import { configSchema, type SchemaNode } from './schema.js';
import type { ConfigProblem } from './types.js';

export const ENV_PREFIX = 'LLMGW_';

/**
 * LLMGW_* variables that are not config settings and so are not errors.
 * LLMGW_CONFIG: the config file path when no `--config` is given.
 * LLMGW_ADMIN: the admin URL the CLI client (`llmgw ctl`) talks to.
 */
export const NON_CONFIG_ENV: ReadonlySet<string> = new Set(['LLMGW_CONFIG', 'LLMGW_ADMIN']);

export interface EnvSetting {
  /** The variable, e.g. LLMGW_ROUTER__MAX_BODY_BYTES. */
  readonly name: string;
  readonly segments: readonly string[];
  readonly schema: SchemaNode;
}

export interface EnvOverride {
  readonly name: string;
  readonly segments: readonly Segment[];
  readonly value: unknown;
}

let settings: Map<string, EnvSetting> | undefined;

/** Every variable that maps to a setting, derived from the schema. */
export function envSettings(): ReadonlyMap<string, EnvSetting> {
  if (settings) return settings;
  const out = new Map<string, EnvSetting>();
  const walk = (node: SchemaNode, path: string[]): void => {
    for (const [key, child] of Object.entries(node.properties ?? {})) {
      const segs = [...path, key];
      if (child.type === 'object') walk(child, segs);
      else if (child.type !== 'array') {
        const name = ENV_PREFIX + segs.map((s) => s.toUpperCase()).join('__');
        out.set(name, { name, segments: segs, schema: child });
      }
    }
  };
  walk(configSchema, []);
  settings = out;
  return out;
}

/** The overrides the environment asks for, and the variables that name no setting. */
export function readEnv(env: NodeJS.ProcessEnv): { overrides: EnvOverride[]; problems: ConfigProblem[] } {
  const known = envSettings();
  const overrides: EnvOverride[] = [];
  const problems: ConfigProblem[] = [];
  for (const name of Object.keys(env).sort()) {
    if (!name.startsWith(ENV_PREFIX) || NON_CONFIG_ENV.has(name)) continue;
    const raw = env[name];
    if (raw === undefined) continue;
    const setting = known.get(name);
    if (!setting) {
      const hint = suggest(name, known.keys());
      const tail = hint !== undefined ? `did you mean ${hint}?` : `settings are ${[...known.keys()].join(', ')}`;
      problems.push({ source: `env ${name}`, path: '', message: `is not a config setting (${tail})` });
      continue;
    }
    overrides.push({ name, segments: setting.segments, value: setting.schema.type === 'string' ? raw : scalar(raw) });
  }
  return { overrides, problems };
}

function scalar(raw: string): unknown {
  try {
    return parseYaml(raw);
  } catch {
    return raw;
  }
}
