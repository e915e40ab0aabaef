// Files a config names (the agent port's TLS material) are checked when it loads, so a
// wrong path stops the server at start with the key that named it, not at the first
// agent's connection. Relative paths are read from the working directory, as the
// server later reads them.

import { accessSync, constants, statSync } from 'node:fs';
import type { RawProblem } from './problems.js';

const TLS_FILES = ['ca', 'cert', 'key'] as const;

/** "ENOENT: no such file or directory, open 'x'" → "no such file or directory (ENOENT)". */
export function osReason(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  return e.code ? `${e.message.replace(new RegExp(`^${e.code}: `), '').replace(/, \w+ '.*'$/, '')} (${e.code})` : e.message;
}

/** Why `path` cannot be read as a file, or undefined when it can. */
export function unreadable(path: string): string | undefined {
  try {
    if (statSync(path).isDirectory()) return 'is a directory, not a file';
    accessSync(path, constants.R_OK);
    return undefined;
  } catch (err) {
    return osReason(err);
  }
}

export function checkFiles(data: unknown): RawProblem[] {
  const tls = (data as { agent_tls?: unknown } | null)?.agent_tls;
  if (typeof tls !== 'object' || tls === null) return [];
  const out: RawProblem[] = [];
  for (const key of TLS_FILES) {
    const path = (tls as Record<string, unknown>)[key];
    if (typeof path !== 'string' || path === '') continue; // the schema reports it
    const why = unreadable(path);
    if (why !== undefined) out.push({ segments: ['agent_tls', key], message: `cannot read ${path}: ${why}` });
  }
  return out;
}
