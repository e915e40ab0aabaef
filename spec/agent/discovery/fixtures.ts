// Paths into spec/fixtures/hardware. tsc does not copy non-TS files into dist, so the
// fixtures are read from the source tree: dist/spec/agent/discovery → the repo root.
import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const FIXTURES = fileURLToPath(new URL('../../../../spec/fixtures/hardware/', import.meta.url));

export const CASES = ['h100-8x', 'a100-8x', 'l40s-4x', 'foreign-process', 'ecc-fault', 'na-fields', 'no-ib'] as const;
export type Case = (typeof CASES)[number];

/** The fixture's executable stand-in for nvidia-smi. */
export const smiOf = (c: Case): string => join(FIXTURES, c, 'nvidia-smi');
let emptyIbRoot: string | undefined;
/**
 * The fixture's stand-in for /sys/class/infiniband; for a node without IB (no `sys` in
 * the fixture) an empty directory, since a given root that does not exist is an error.
 */
export const ibRootOf = (c: Case): string => {
  const root = join(FIXTURES, c, 'sys');
  return existsSync(root) ? root : (emptyIbRoot ??= mkdtempSync(join(tmpdir(), 'llmgw-no-ib-')));
};
/** One of the captured outputs of a fixture. */
export const readFixture = (c: Case, file: 'query-gpu.csv' | 'query-compute-apps.csv' | 'topo-m.txt'): string => readFileSync(join(FIXTURES, c, file), 'utf8');

export function tempDir(prefix = 'llmgw-discovery-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** An executable shell script in a fresh temp dir; returns its path. */
export function script(body: string, name = 'nvidia-smi'): string {
  const path = join(tempDir(), name);
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
  return path;
}

/** A stand-in that answers like the fixture `c`, except for calls whose first argument starts with `match`. */
export function smiFailing(c: Case, match: string, body: string): string {
  return script(`case "$1" in\n  ${match}*) ${body} ;;\n  *) exec '${smiOf(c)}' "$@" ;;\nesac`);
}
