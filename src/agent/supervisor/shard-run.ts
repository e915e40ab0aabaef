// One shard's life: its processes started in order (sidecars first, the engine last),
// readiness judged, exits watched, and the whole shard stopped as one. A shard fails
// whole (DESIGN rule 3): any sidecar or the engine exiting on its own fails it, and the
// rest of its processes are stopped before the failure is reported, so that nothing of
// it still holds a port or a GPU when the control plane acts on the report.
import { closeSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Dispatcher } from 'undici';
import { LlmgwError } from '../../errors.js';
import type { Launch, ShardSpec } from '../engines/index.js';
import type { ShardEvent, ShardState, ShardStatus } from '../../messages/agent.js';
import type { ProcessFingerprint } from './fingerprint.js';
import { OutputLog } from './output-log.js';
import { spawnGroup, stopGroup } from './process-group.js';
import { probeServedModel } from './readiness.js';
import { waitForListener } from './rendezvous.js';
import { AdoptedProcess, SpawnedProcess, type ShardProcess } from './shard-process.js';
import { drainRequests } from './drain.js';
import { canTransition } from './shard-state.js';
import { STATE_VERSION, type StateDir } from './state-file.js';

export interface SupervisorTiming {
  /** How long a process group gets after SIGTERM before SIGKILL. */
  readonly stopTimeoutMs: number;
  /** How long the leader may take to list the served name, from the last process start. */
  readonly readyTimeoutMs: number;
  /** Between readiness probes. */
  readonly healthIntervalMs: number;
  /** How long a rank that serves no HTTP must stay up to count as ready. */
  readonly settleMs: number;
  /** Between liveness checks of adopted processes (not our children, so nobody tells us they exited). */
  readonly watchIntervalMs: number;
  /** How long a stop waits for the leader's in-flight requests to finish before signalling. */
  readonly drainGraceMs: number;
}

export interface ShardRunDeps {
  readonly state: StateDir;
  readonly bootId: string;
  readonly http: Dispatcher;
  readonly timing: SupervisorTiming;
  readonly outputLines: number;
  /** Variables every process of the shard gets, by which the orphan scan knows them. */
  readonly tagEnv: Readonly<Record<string, string>>;
  emit(event: ShardEvent): void;
}

export class ShardRun {
  private current: ShardState = 'pending';
  private since = Date.now();
  private reason: string | null = null;
  private tail: string[] | null = null;
  private readonly procs: ShardProcess[] = [];
  /** Cancels the start sequence and the readiness wait when the shard stops or fails. */
  private readonly abort = new AbortController();
  private lifecycle: Promise<void> = Promise.resolve();
  /** Set once the shard is being stopped or failed; resolves when it is terminal. */
  private ending: Promise<void> | undefined;
  private readonly output: OutputLog;

  constructor(
    readonly id: string,
    readonly spec: ShardSpec,
    readonly launch: Launch,
    private readonly deps: ShardRunDeps,
    readonly adopted = false,
  ) {
    this.output = new OutputLog(deps.state.logPath(id), deps.outputLines);
  }

  get state(): ShardState {
    return this.current;
  }

  /** Starts the commands in order, then waits for readiness. Progress is reported as events. */
  start(): void {
    this.lifecycle = this.live(() => this.spawnAll());
  }

  /** Takes over the processes a previous agent started, verified by their fingerprints. */
  adopt(processes: readonly ProcessFingerprint[]): void {
    for (const [i, fp] of processes.entries()) {
      this.watch(new AdoptedProcess(this.roleOf(i), this.launch.commands[i]!.argv[0]!, fp, this.deps.timing.watchIntervalMs));
    }
    this.lifecycle = this.live(async () => {});
  }

  /**
   * Draining (a ready leader finishes its in-flight requests, within the grace period),
   * then every process group stopped (the engine first, then its sidecars), then
   * `stopped`: or `failed` when a group survives SIGKILL. Draining is reported before
   * this returns; the promise resolves when the shard is terminal.
   */
  stop(): Promise<void> {
    if (this.ending) return this.ending;
    const wasReady = this.current === 'ready';
    this.transition('draining');
    this.ending = (async () => {
      await this.halt();
      const cut = wasReady ? await this.drain() : null;
      const problems = await this.stopProcesses();
      this.deps.state.remove(this.id);
      if (problems.length > 0) {
        this.transition('failed', problems.join('; '), this.output.tail());
      } else {
        this.output.remove();
        this.transition('stopped', cut);
      }
    })();
    return this.ending;
  }

  /**
   * Forgets the processes without signalling them: the agent is shutting down and the
   * engines keep serving until a restarted agent adopts them.
   */
  release(): void {
    this.abort.abort();
    for (const p of this.procs) p.release();
  }

  status(): ShardStatus {
    return {
      id: this.id,
      spec: this.spec,
      state: this.current,
      since: this.since,
      reason: this.reason,
      tail: this.tail,
      adopted: this.adopted,
      processes: this.procs.map((p) => ({ role: p.role, argv0: p.argv0, pid: p.pid, pgid: p.pgid })),
    };
  }

  // ---- the life of a live shard -----------------------------------------------------

  /** Runs `launch`, then readiness; any error fails the shard unless it is already ending. */
  private async live(launch: () => Promise<void>): Promise<void> {
    try {
      await launch();
      this.abort.signal.throwIfAborted();
      this.transition('loading');
      await this.awaitReadiness();
      this.abort.signal.throwIfAborted();
      for (const p of this.procs) p.refresh();
      this.record();
      this.transition('ready', null);
    } catch (err) {
      if (this.abort.signal.aborted) return; // stopping or failing: that path reports
      void this.fail(LlmgwError.from(err).message);
    }
  }

  private async spawnAll(): Promise<void> {
    this.transition('starting');
    const fd = this.output.open(true);
    try {
      for (const [i, cmd] of this.launch.commands.entries()) {
        if (cmd.waitFor !== undefined) {
          this.reason = `waiting for rendezvous ${cmd.waitFor.host}:${cmd.waitFor.port} before starting ${cmd.argv[0]}`;
          await waitForListener(cmd.waitFor, this.abort.signal);
        }
        this.abort.signal.throwIfAborted();
        const child = await spawnGroup({ argv: cmd.argv, env: { ...cmd.env, ...this.deps.tagEnv }, outputFd: fd });
        // Kept even when the shard was stopped meanwhile: the stop that waits for this
        // sequence then stops it with the rest.
        this.watch(new SpawnedProcess(this.roleOf(i), cmd.argv[0]!, child));
        this.record();
      }
    } finally {
      closeSync(fd); // the children hold their own copies
    }
  }

  private async awaitReadiness(): Promise<void> {
    const { readyTimeoutMs, healthIntervalMs, settleMs } = this.deps.timing;
    const signal = this.abort.signal;
    const check = this.launch.healthCheck;
    if (check === null) {
      // A worker rank has no port to ask; the replica's real readiness is its leader
      // answering, which only happens once every worker has joined.
      this.reason = `serves no HTTP: ready once its processes stay up for ${settleMs} ms`;
      await sleep(settleMs, undefined, { signal });
      return;
    }
    const deadline = Date.now() + readyTimeoutMs;
    for (;;) {
      const why = await probeServedModel(check, this.deps.http, Math.max(1_000, healthIntervalMs));
      signal.throwIfAborted();
      if (why === null) return;
      this.reason = `not ready yet: ${why}`;
      if (Date.now() >= deadline) throw new LlmgwError('LLMGW_UPSTREAM_TIMEOUT', `not ready within ${readyTimeoutMs} ms: ${why}`);
      await sleep(healthIntervalMs, undefined, { signal });
    }
  }

  private watch(p: ShardProcess): void {
    this.procs.push(p);
    p.watch((why) => {
      if (this.ending) return; // being stopped: exits are expected
      const what = p.role === 'engine' ? `engine ${p.argv0} (pid ${p.pid}) ${why}` : `sidecar ${p.argv0} (pid ${p.pid}) ${why}, and a shard fails whole`;
      void this.fail(what);
    });
  }

  private fail(reason: string): Promise<void> {
    this.ending ??= (async () => {
      const tail = this.output.tail(); // before the teardown adds its own lines
      await this.halt();
      const problems = await this.stopProcesses();
      this.deps.state.remove(this.id);
      this.transition('failed', [reason, ...problems].join('; '), tail);
    })();
    return this.ending;
  }

  /** Waits for the leader's requests in flight; returns what the grace period cut, if anything. */
  private async drain(): Promise<string | null> {
    const check = this.launch.healthCheck;
    if (check === null) return null; // a worker rank serves no requests of its own
    return drainRequests({
      engine: this.spec.engine,
      check,
      dispatcher: this.deps.http,
      graceMs: this.deps.timing.drainGraceMs,
      pollMs: this.deps.timing.healthIntervalMs,
      progress: (what) => (this.reason = what),
    });
  }

  /** Cancels the start sequence or readiness wait and lets it unwind. */
  private async halt(): Promise<void> {
    this.abort.abort();
    await this.lifecycle;
  }

  /** Stops every group, the engine first (it uses its sidecars); returns what could not be stopped. */
  private async stopProcesses(): Promise<string[]> {
    const problems: string[] = [];
    for (const p of [...this.procs].reverse()) {
      p.release();
      try {
        await stopGroup(p.pgid, { timeoutMs: this.deps.timing.stopTimeoutMs });
      } catch (err) {
        problems.push(LlmgwError.from(err).message);
      }
    }
    return problems;
  }

  private record(): void {
    this.deps.state.write({
      version: STATE_VERSION,
      id: this.id,
      bootId: this.deps.bootId,
      spec: this.spec,
      launch: this.launch,
      processes: this.procs.flatMap((p) => (p.fingerprint === null ? [] : [p.fingerprint])),
    });
  }

  private roleOf(index: number): 'sidecar' | 'engine' {
    return index === this.launch.commands.length - 1 ? 'engine' : 'sidecar';
  }

  private transition(to: ShardState, reason: string | null = null, tail: string[] | null = null): void {
    const from = this.current;
    if (!canTransition(from, to)) throw new LlmgwError('LLMGW_HANDLER_FAILED', `shard ${this.id}: no transition from ${from} to ${to}`);
    this.current = to;
    this.since = Date.now();
    this.reason = reason;
    this.tail = tail;
    this.deps.emit({ id: this.id, replica: this.spec.replica, rank: this.spec.rank, from, state: to, at: this.since, reason, tail });
  }
}
