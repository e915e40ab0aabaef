// One JSON file per live shard in the state directory: the full spec (what lets a
// restarted agent describe the engine back to the control plane and match it to a
// replica), the launch (which process is a sidecar, how readiness is judged) and a
// fingerprint of every process (what lets it be signalled again safely).
//
// Written atomically (temporary file, then rename): a torn file after a crash would read
// as an unidentifiable shard, and its engine would be killed. Not fsynced: after a power
// loss the boot id differs and no record identifies anything anyway.
import { mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LlmgwError } from '../../errors.js';
import type { Launch, ShardSpec } from '../engines/index.js';
import { shardSpecProblems } from '../engines/shard-spec-schema.js';
import type { ProcessFingerprint } from './fingerprint.js';

export const STATE_VERSION = 1;

export interface ShardRecord {
  readonly version: typeof STATE_VERSION;
  readonly id: string;
  /** The boot the fingerprints' start times count from. */
  readonly bootId: string;
  readonly spec: ShardSpec;
  readonly launch: Launch;
  /** In command order; fewer than the launch's commands while the shard is starting. */
  readonly processes: readonly ProcessFingerprint[];
}

/** A state file as found on disk: what of it can be trusted, and what is wrong with the rest. */
export interface Leftover {
  readonly id: string;
  readonly bootId: string | null;
  readonly spec: ShardSpec | null;
  readonly launch: Launch | null;
  /** Only the well-formed entries: a malformed one is never signalled. */
  readonly processes: readonly ProcessFingerprint[];
  readonly problems: readonly string[];
}

/** A shard id names files: letters, digits, `.`, `_`, `-`, not starting with a dot. */
export const SHARD_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export function assertShardId(id: string): void {
  if (!SHARD_ID_PATTERN.test(id)) {
    throw new LlmgwError('LLMGW_INVALID_REQUEST', `shard id '${id}' is not 1-128 letters, digits, '.', '_' or '-' starting with a letter or digit`);
  }
}

export class StateDir {
  constructor(readonly dir: string) {
    mkdirSync(dir, { recursive: true });
  }

  recordPath(id: string): string {
    return join(this.dir, `${id}.json`);
  }

  logPath(id: string): string {
    return join(this.dir, `${id}.log`);
  }

  write(record: ShardRecord): void {
    const path = this.recordPath(record.id);
    const tmp = `${path}.tmp`;
    writeFileSync(tmp, JSON.stringify(record, null, 2) + '\n');
    renameSync(tmp, path);
  }

  remove(id: string): void {
    rmSync(this.recordPath(id), { force: true });
  }

  /** Every state file a previous agent left, parsed as far as it can be trusted. */
  leftovers(): Leftover[] {
    return readdirSync(this.dir)
      .filter((name) => name.endsWith('.json'))
      .map((name) => parseLeftover(name.slice(0, -'.json'.length), readFileSync(join(this.dir, name), 'utf8')));
  }
}

export function parseLeftover(id: string, text: string): Leftover {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    return { id, bootId: null, spec: null, launch: null, processes: [], problems: ['the state file is not JSON'] };
  }
  const problems: string[] = [];
  const r = (isObject(data) ? data : {}) as Record<string, unknown>;
  if (r.version !== STATE_VERSION) problems.push(`state file version ${JSON.stringify(r.version)} is not ${STATE_VERSION}`);
  if (r.id !== id) problems.push(`the state file names shard ${JSON.stringify(r.id)}`);
  const bootId = typeof r.bootId === 'string' ? r.bootId : null;
  if (bootId === null) problems.push('no boot id');

  const specProblems = shardSpecProblems(r.spec);
  if (specProblems.length > 0) problems.push(`the spec is unusable: ${specProblems.join('; ')}`);
  const launch = isLaunch(r.launch) ? r.launch : null;
  if (launch === null) problems.push('the launch is unusable');

  const processes: ProcessFingerprint[] = [];
  const listed = Array.isArray(r.processes) ? (r.processes as unknown[]) : [];
  if (!Array.isArray(r.processes)) problems.push('no process list');
  listed.forEach((p, i) => {
    if (isFingerprint(p)) processes.push(p);
    else problems.push(`process ${i} is malformed`);
  });
  return { id, bootId, spec: specProblems.length === 0 ? (r.spec as ShardSpec) : null, launch, processes, problems };
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isStrings = (v: unknown): v is string[] => Array.isArray(v) && v.every((s) => typeof s === 'string');

function isFingerprint(v: unknown): v is ProcessFingerprint {
  if (!isObject(v)) return false;
  const { pid, pgid, startTime, cmdline } = v;
  // Never 0 or 1: those would address the agent's own group or every process.
  const id = (n: unknown): boolean => Number.isInteger(n) && (n as number) > 1;
  return id(pid) && id(pgid) && typeof startTime === 'string' && /^\d+$/.test(startTime) && isStrings(cmdline) && cmdline.length > 0;
}

function isLaunch(v: unknown): v is Launch {
  if (!isObject(v) || !Array.isArray(v.commands) || v.commands.length === 0) return false;
  const commandsOk = v.commands.every((c: unknown) => isObject(c) && isStrings(c.argv) && c.argv.length > 0 && typeof c.servesHttp === 'boolean' && isObject(c.env));
  const hc = v.healthCheck;
  return commandsOk && (hc === null || (isObject(hc) && typeof hc.url === 'string' && typeof hc.servedName === 'string'));
}
