// The roster: the nodes the control plane last knew as alive, kept in a file across
// its restarts. It says who to wait for, never what runs where (the agents' Registers
// say that): after a restart nothing is placed until every node on it has reported
// (or the settle period ends), so no replica an unreported node still runs is
// duplicated. A lost node leaves the roster, so a decommissioned one is not waited for.
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/** The nodes in the roster file; none when it is missing or unreadable (`problem` says why). */
export function readRoster(path: string): { nodes: string[]; problem: string | null } {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { nodes: [], problem: null };
    return { nodes: [], problem: `cannot read ${path}: ${(err as Error).message}` };
  }
  try {
    const data = JSON.parse(text) as { nodes?: unknown };
    if (!Array.isArray(data.nodes) || !data.nodes.every((n) => typeof n === 'string')) return { nodes: [], problem: `${path}: no list of node names under "nodes"` };
    return { nodes: data.nodes as string[], problem: null };
  } catch (err) {
    return { nodes: [], problem: `${path}: not JSON (${(err as Error).message})` };
  }
}

/** Replaces the roster atomically: a crash mid-write leaves the old file, never half of one. */
export function writeRoster(path: string, nodes: readonly string[]): void {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify({ nodes: [...nodes].sort() }, null, 2)}\n`);
  renameSync(tmp, path);
}
