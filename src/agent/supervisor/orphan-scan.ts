// Processes the agent started that no state file accounts for: the agent died between
// spawning a command and recording it, a state file was deleted by hand, or an engine's
// worker escaped into a process group of its own. Every process the supervisor starts
// carries the state directory in its environment (inherited by everything it forks), so
// they are found by reading /proc/<pid>/environ, and only processes of this agent's
// state directory are ever considered: another agent, or another user's processes, are not.
import { listPids, readEnviron, readFingerprint } from './fingerprint.js';

/** Set on every process of every shard: the absolute state directory of the agent that started it. */
export const STATE_DIR_ENV = 'LLMGW_AGENT_STATE_DIR';
/** Set on every process of a shard: the shard's id, for the operator reading `ps e`. */
export const SHARD_ENV = 'LLMGW_SHARD';

export interface Orphan {
  readonly pid: number;
  readonly pgid: number;
  readonly shard: string | null;
}

/** Processes tagged with `stateDir` whose group is not in `accounted`. */
export function findOrphans(stateDir: string, accounted: ReadonlySet<number>): Orphan[] {
  const ownGroup = readFingerprint(process.pid)?.pgid;
  const out: Orphan[] = [];
  for (const pid of listPids()) {
    if (pid === process.pid) continue;
    const env = readEnviron(pid);
    if (env?.get(STATE_DIR_ENV) !== stateDir) continue;
    const fp = readFingerprint(pid);
    if (fp === null || fp.pgid <= 1 || fp.pgid === ownGroup || accounted.has(fp.pgid)) continue;
    out.push({ pid, pgid: fp.pgid, shard: env.get(SHARD_ENV) ?? null });
  }
  return out;
}
