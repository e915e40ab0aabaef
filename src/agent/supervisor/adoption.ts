// What a restarted agent does with each state file a previous agent left behind.
//
// Engines outlive their agent on purpose (an agent restart must not interrupt served
// traffic), so they have to be found again. The rules, most careful first:
// - a recorded pid whose fingerprint no longer matches belongs to someone else now (pid
//   reuse): it is never signalled;
// - every process matches and the record is whole: the shard is adopted;
// - anything else (the spec or launch unreadable, a process gone, the agent stopped
//   while starting the shard) leaves an engine nothing can describe. It is worse than no
//   engine, because placement would hand its GPUs out again: the processes that still
//   match their fingerprints are killed, and the shard is reported failed.
import { fingerprintMismatch, type ProcessFingerprint } from './fingerprint.js';
import type { Leftover } from './state-file.js';
import type { Launch, ShardSpec } from '../engines/index.js';

export type Verdict =
  | { readonly kind: 'adopt'; readonly spec: ShardSpec; readonly launch: Launch; readonly processes: readonly ProcessFingerprint[] }
  | { readonly kind: 'discard'; readonly reason: string; readonly kill: readonly ProcessFingerprint[] };

export function judgeLeftover(left: Leftover, bootId: string, read: (pid: number) => ProcessFingerprint | null): Verdict {
  // Start times count from boot: a record from another boot matches nothing safely.
  if (left.bootId !== bootId) return { kind: 'discard', reason: 'its state file is from before the last reboot (or names no boot), so its processes are gone', kill: [] };

  const ours: ProcessFingerprint[] = [];
  const gone: string[] = [];
  for (const fp of left.processes) {
    const mismatch = fingerprintMismatch(fp, read(fp.pid));
    if (mismatch === null) ours.push(fp);
    else gone.push(mismatch);
  }
  const problems = [...left.problems];
  const commands = left.launch?.commands.length;
  if (commands !== undefined && left.processes.length !== commands) {
    problems.push(`${left.processes.length} of its ${commands} processes are recorded (the agent stopped while starting it?)`);
  }

  if (problems.length === 0 && gone.length === 0 && left.spec !== null && left.launch !== null) {
    return { kind: 'adopt', spec: left.spec, launch: left.launch, processes: ours };
  }
  const why = problems.length > 0 ? `it cannot be identified: ${problems.join('; ')}` : `part of it is gone: ${gone.join('; ')}`;
  return { kind: 'discard', reason: `shard ${left.id} left by a previous agent was not adopted, because ${why}`, kill: ours };
}
