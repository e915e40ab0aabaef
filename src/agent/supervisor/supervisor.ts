// The node's engine processes: every shard this agent runs, started, adopted or failed.
// It lives inside the supervisor actor (src/actors/agent/supervisor-actor.ts), which
// gives it one thread and one message at a time; this class holds no thread logic, so
// specs drive it directly with real processes.
import { resolve } from 'node:path';
import { Agent } from 'undici';
import { LlmgwError } from '../../errors.js';
import { createLogger } from '../../log.js';
import type { ShardEvent, ShardStatus, StartShardReply } from '../../messages/agent.js';
import { buildLaunch, type LaunchOptions, type ShardSpec } from '../engines/index.js';
import { shardSpecProblems } from '../engines/shard-spec-schema.js';
import { judgeLeftover } from './adoption.js';
import { bootId, readFingerprint } from './fingerprint.js';
import { findOrphans, SHARD_ENV, STATE_DIR_ENV } from './orphan-scan.js';
import { OutputLog } from './output-log.js';
import { stopGroup } from './process-group.js';
import { ShardRun, type SupervisorTiming } from './shard-run.js';
import { isTerminal } from './shard-state.js';
import { assertShardId, StateDir, type Leftover } from './state-file.js';

export interface SupervisorOptions {
  readonly stateDir: string;
  /** Where the engines are installed; unset keys keep their defaults. */
  readonly launch: Partial<LaunchOptions>;
  readonly timing: SupervisorTiming;
  /** How many lines of output a failure report carries. */
  readonly outputLines: number;
  /** Every transition of every shard. */
  readonly onEvent: (event: ShardEvent) => void;
}

/** What the start-up scan did with what a previous agent left. */
export interface Recovery {
  readonly adopted: readonly string[];
  /** Shards not adopted; their surviving processes were killed. */
  readonly failed: readonly string[];
  /** Process groups the agent had started that no state file accounted for, killed. */
  readonly orphanGroups: readonly number[];
}

const log = createLogger('agent.supervisor');

/** The most lines one output request returns: the log's tail window holds 64 KiB anyway. */
const MAX_OUTPUT_LINES = 10_000;

export class Supervisor {
  private readonly runs = new Map<string, ShardRun>();
  /** The final status of shards that failed, kept for the operator until stopped or replaced. */
  private readonly failed = new Map<string, ShardStatus>();
  private readonly state: StateDir;
  private readonly http: Agent;
  private readonly bootId = bootId();
  private readonly stateDir: string;

  private constructor(private readonly opts: SupervisorOptions) {
    this.stateDir = resolve(opts.stateDir);
    this.state = new StateDir(this.stateDir);
    // Its own pool, closed with the supervisor: probes keep no socket open past it.
    this.http = new Agent({ keepAliveTimeout: 1_000 });
  }

  /** Opens the state directory and takes back, or cleans up after, whatever a previous agent left running. */
  static async open(opts: SupervisorOptions): Promise<{ supervisor: Supervisor; recovery: Recovery }> {
    const supervisor = new Supervisor(opts);
    const recovery = await supervisor.recover();
    return { supervisor, recovery };
  }

  /**
   * Starts a shard. Idempotent: the control plane retries commands, and the same spec
   * under a live id answers with its status instead of a second engine. A different
   * spec under a live id is a conflict; under a failed or unknown id it starts afresh.
   */
  start(id: string, spec: ShardSpec): StartShardReply {
    assertShardId(id);
    const problems = shardSpecProblems(spec);
    if (problems.length > 0) throw new LlmgwError('LLMGW_SHARD_INVALID', `shard ${id} cannot be launched: ${problems.join('; ')}`, { problems });
    const live = this.runs.get(id);
    if (live !== undefined) {
      if (canonical(live.spec) === canonical(spec)) return { created: false, status: live.status() };
      throw new LlmgwError('LLMGW_SHARD_CONFLICT', `shard ${id} is ${live.state} with a different spec; stop it first`);
    }
    const run = new ShardRun(id, spec, buildLaunch(spec, this.opts.launch), this.deps(id));
    this.failed.delete(id);
    this.runs.set(id, run);
    run.start();
    return { created: true, status: run.status() };
  }

  /**
   * Stops a shard: `status` is as it stands now (draining), `done` resolves with the
   * terminal status. A failed shard is forgotten, with its output log.
   */
  stop(id: string): { status: ShardStatus; done: Promise<ShardStatus> } {
    const run = this.runs.get(id);
    if (run !== undefined) {
      const ended = run.stop();
      return { status: run.status(), done: ended.then(() => run.status()) };
    }
    const failed = this.failed.get(id);
    if (failed === undefined) throw new LlmgwError('LLMGW_NOT_FOUND', `no shard '${id}' on this node`);
    this.failed.delete(id);
    new OutputLog(this.state.logPath(id), 0).remove();
    return { status: failed, done: Promise.resolve(failed) };
  }

  list(): ShardStatus[] {
    return [...[...this.runs.values()].map((r) => r.status()), ...this.failed.values()].sort((a, b) => a.id.localeCompare(b.id));
  }

  /**
   * The last `lines` lines of a shard's output (0: outputLines), read from its log file,
   * so an adopted shard shows what it printed before the agent restarted.
   */
  output(id: string, lines: number): string[] {
    if (!this.runs.has(id) && !this.failed.has(id)) throw new LlmgwError('LLMGW_NOT_FOUND', `no shard '${id}' on this node`);
    return new OutputLog(this.state.logPath(id), Math.min(lines || this.opts.outputLines, MAX_OUTPUT_LINES)).tail();
  }

  /** Stops every shard and waits for them (specs, and an operator's "stop everything"). */
  async stopAll(): Promise<void> {
    await Promise.all([...this.runs.keys()].map((id) => this.stop(id).done));
  }

  /**
   * Lets go of every shard without stopping it, for agent shutdown: engines keep
   * serving, and the state files let the next agent adopt them.
   */
  async release(): Promise<void> {
    for (const run of this.runs.values()) run.release();
    this.runs.clear();
    if (!this.http.closed) await this.http.close();
  }

  private deps(id: string): ConstructorParameters<typeof ShardRun>[3] {
    return {
      state: this.state,
      bootId: this.bootId,
      http: this.http,
      timing: this.opts.timing,
      outputLines: this.opts.outputLines,
      tagEnv: { [STATE_DIR_ENV]: this.stateDir, [SHARD_ENV]: id },
      emit: (event) => this.onEvent(event),
    };
  }

  private onEvent(event: ShardEvent): void {
    const run = this.runs.get(event.id);
    if (isTerminal(event.state)) {
      this.runs.delete(event.id);
      if (event.state === 'failed' && run !== undefined) this.failed.set(event.id, run.status());
    }
    const fields = { shard: event.id, from: event.from, state: event.state, reason: event.reason ?? undefined };
    if (event.state === 'failed') log.error('shard failed', { ...fields, tail: event.tail });
    else log.info('shard state', fields);
    this.opts.onEvent(event);
  }

  private async recover(): Promise<Recovery> {
    const adopted: string[] = [];
    const failed: string[] = [];
    const accounted = new Set<number>();
    for (const left of this.state.leftovers()) {
      const verdict = judgeLeftover(left, this.bootId, readFingerprint);
      if (verdict.kind === 'adopt') {
        const run = new ShardRun(left.id, verdict.spec, verdict.launch, this.deps(left.id), true);
        this.runs.set(left.id, run);
        for (const p of verdict.processes) accounted.add(p.pgid);
        run.adopt(verdict.processes);
        adopted.push(left.id);
        continue;
      }
      const killed = await this.killAll(verdict.kill.map((p) => p.pgid));
      this.state.remove(left.id);
      this.fail(left, [verdict.reason, ...killed].join('; '));
      failed.push(left.id);
    }
    const orphans = findOrphans(this.stateDir, accounted);
    const orphanGroups = [...new Set(orphans.map((o) => o.pgid))];
    if (orphanGroups.length > 0) {
      log.warn('killing processes this agent started that no state file accounts for', { orphans });
      log.warn('orphans killed', { outcomes: await this.killAll(orphanGroups) });
    }
    return { adopted, failed, orphanGroups };
  }

  /** Stops groups; returns what happened in words, for the failure report. */
  private async killAll(pgids: readonly number[]): Promise<string[]> {
    const out: string[] = [];
    for (const pgid of pgids) {
      try {
        out.push(`process group ${pgid} ${(await stopGroup(pgid, { timeoutMs: this.opts.timing.stopTimeoutMs })) === 'killed' ? 'killed with SIGKILL' : 'stopped'}`);
      } catch (err) {
        out.push(LlmgwError.from(err).message);
      }
    }
    return out;
  }

  /** Records a leftover that was not adopted as a failed shard, and reports it. */
  private fail(left: Leftover, reason: string): void {
    const tail = new OutputLog(this.state.logPath(left.id), this.opts.outputLines).tail();
    const status: ShardStatus = { id: left.id, spec: left.spec, state: 'failed', since: Date.now(), reason, tail, adopted: false, processes: [] };
    this.failed.set(left.id, status);
    this.onEvent({ id: left.id, replica: left.spec?.replica ?? null, rank: left.spec?.rank ?? null, from: 'pending', state: 'failed', at: status.since, reason, tail });
  }
}

/** JSON with sorted keys: two specs are the same when they say the same, in any key order. */
function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, val: unknown) =>
    val !== null && typeof val === 'object' && !Array.isArray(val) ? Object.fromEntries(Object.entries(val).sort(([a], [b]) => a.localeCompare(b))) : val,
  );
}
