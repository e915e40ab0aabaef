// Real processes for supervisor specs: fixture scripts from spec/fixtures/processes,
// executables generated around them (so the engine adapters' real argv reaches them),
// free loopback ports, and a harness that records every shard event and guarantees that
// no process a spec started outlives it.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { LaunchOptions, ShardSpec } from '../../../src/agent/engines/index.js';
import { Supervisor, findOrphans, groupAlive, type Recovery, type SupervisorTiming } from '../../../src/agent/supervisor/index.js';
import type { ShardEvent, ShardState, ShardStatus } from '../../../src/messages/agent.js';
import { until } from '../../support/until.js';

/** tsc copies no .mjs into dist, so fixtures are read from the source tree. */
export const PROCESSES = fileURLToPath(new URL('../../../../spec/fixtures/processes/', import.meta.url));
export const fixture = (name: string): string => join(PROCESSES, name);

export function tempDir(prefix = 'llmgw-supervisor-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/**
 * An executable `dir/name` that runs `script` with this Node. The shebang names Node by
 * absolute path, so the process execs once and its command line is final from the start.
 */
export function executable(dir: string, name: string, script: string): string {
  const path = join(dir, name);
  writeFileSync(path, `#!${process.execPath}\nawait import(${JSON.stringify(pathToFileURL(script).href)});\n`);
  chmodSync(path, 0o755);
  return path;
}

/** A loopback port nobody listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => res(port));
    });
  });
}

/** Short enough that every spec takes well under a second or two; long enough for a loaded 2-core box. */
export const TIMING: SupervisorTiming = { stopTimeoutMs: 2_000, readyTimeoutMs: 8_000, healthIntervalMs: 25, settleMs: 150, watchIntervalMs: 25, drainGraceMs: 5_000 };

/** A single-node vLLM shard on one (pretend) H100, serving on loopback. */
export function engineSpec(httpPort: number, over: Partial<ShardSpec> = {}): ShardSpec {
  return {
    replica: 'llama-1',
    model: '/models/llama-3.1-8b',
    servedName: 'llama-3.1-8b',
    engine: 'vllm',
    rank: 0,
    ranks: 1,
    tp: 1,
    pp: 1,
    gpus: [{ index: 0, class: 'h100-80g', computeCapability: '9.0' }],
    httpHost: '127.0.0.1',
    httpPort,
    ...over,
  };
}

/** A rank of a two-node vLLM replica under Ray, everything on loopback. */
export function rayRankSpec(rank: number, httpPort: number, leaderPort: number, over: Partial<ShardSpec> = {}): ShardSpec {
  return engineSpec(httpPort, {
    launchMode: 'ray',
    rank,
    ranks: 2,
    tp: 1,
    pp: 2,
    nodeIp: '127.0.0.1',
    leader: { ip: '127.0.0.1', port: leaderPort },
    transport: { kind: 'socket' },
    mgmtInterface: 'lo',
    ...over,
  });
}

/**
 * A supervisor over a fresh state directory, with `vllm` and `ray` standing in for the
 * engines, and every event recorded. `restart()` opens a second supervisor on the same
 * directory after releasing the first, as an agent restart does.
 */
export class Harness {
  readonly dir = tempDir();
  readonly stateDir = join(this.dir, 'state');
  /** What the next `open()` launches with; a spec may swap in its own fixtures first. */
  launch: Partial<LaunchOptions>;
  readonly events: ShardEvent[] = [];
  sup!: Supervisor;
  recovery!: Recovery;
  private readonly seen = new Set<number>();
  private cleaned = false;
  /** Every group any harness saw: `reaped` checks them once per suite (reaping by init is slow here). */
  static readonly everSeen = new Set<number>();

  constructor(
    private readonly timing: SupervisorTiming = TIMING,
    launch: Partial<LaunchOptions> = {},
  ) {
    this.launch = {
      vllm: executable(this.dir, 'vllm', fixture('fake-vllm.mjs')),
      ray: executable(this.dir, 'ray', fixture('fake-ray.mjs')),
      rendezvousTimeoutMs: 5_000,
      ...launch,
    };
  }

  async open(): Promise<this> {
    const { supervisor, recovery } = await Supervisor.open({
      stateDir: this.stateDir,
      launch: this.launch,
      timing: this.timing,
      outputLines: 20,
      onEvent: (e) => this.events.push(e),
    });
    this.sup = supervisor;
    this.recovery = recovery;
    return this;
  }

  /** An agent restart: the old supervisor lets go (engines keep running), a new one opens. */
  async restart(): Promise<this> {
    await this.sup.release();
    this.events.length = 0;
    return this.open();
  }

  status(id: string): ShardStatus | undefined {
    const s = this.sup.list().find((x) => x.id === id);
    for (const p of s?.processes ?? []) this.track(p.pgid);
    return s;
  }

  /** Waits for shard `id` to reach `state` (by its events), failing early if it ends otherwise. */
  async reach(id: string, state: ShardState, timeoutMs = 10_000): Promise<ShardEvent> {
    let found: ShardEvent | undefined;
    await until(
      () => {
        this.status(id);
        found = this.events.find((e) => e.id === id && e.state === state);
        const ended = this.events.find((e) => e.id === id && (e.state === 'failed' || e.state === 'stopped'));
        if (!found && ended) throw new Error(`shard ${id} ended ${ended.state} waiting for ${state}: ${ended.reason}\n${ended.tail?.join('\n') ?? ''}`);
        return found !== undefined;
      },
      `shard ${id} ${state}`,
      timeoutMs,
    );
    return found!;
  }

  states(id: string): ShardState[] {
    return this.events.filter((e) => e.id === id).map((e) => e.state);
  }

  /** Remembers process groups a spec learnt of some other way, so cleanup checks them too. */
  track(...pgids: number[]): void {
    for (const g of pgids) {
      this.seen.add(g);
      Harness.everSeen.add(g);
      trackGroup(g);
    }
  }

  /**
   * Stops every shard, then proves nothing outlived the spec: no group seen has a living
   * member and no process carrying this state directory is left. Whatever is left is
   * killed, then reported, so one failing spec cannot leak into the next.
   */
  async cleanup(): Promise<void> {
    if (this.cleaned) return;
    this.cleaned = true;
    await this.sup.stopAll();
    await this.sup.release();
    const leftovers = [...this.seen].filter((g) => groupAlive(g));
    const orphans = findOrphans(resolve(this.stateDir), new Set());
    killGroups(new Set([...leftovers, ...orphans.map((o) => o.pgid)]));
    rmSync(this.dir, { recursive: true, force: true });
    if (leftovers.length > 0 || orphans.length > 0) {
      throw new Error(`processes outlived the spec: groups ${leftovers.join(', ')}; orphans ${JSON.stringify(orphans)}`);
    }
  }
}

// Groups still running when the spec process exits (a spec that failed half-way, uvu
// giving up on a suite) are killed, so no engine outlives the run holding a port.
const tracked = new Set<number>();
process.on('exit', () => killGroups(tracked));

/** Registers a process group a spec started, for the exit-time safety net. */
export function trackGroup(pgid: number): void {
  tracked.add(pgid);
}

/** SIGKILL to each group with the raw syscall, not through the code under test. */
export function killGroups(pgids: Iterable<number>): void {
  for (const g of pgids) {
    try {
      process.kill(-g, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

/**
 * The last word on leaks, run as a suite's last test: any group with a living member is
 * killed and reported, and then `kill(-pgid, 0)` must fail with ESRCH for every group,
 * i.e. even the zombies have been reaped (by init, which may take a second here).
 */
export async function reaped(pgids: Iterable<number>, timeoutMs = 5_000): Promise<void> {
  const all = [...new Set(pgids)];
  const living = all.filter((g) => groupAlive(g));
  killGroups(living);
  const esrch = (g: number): boolean => {
    try {
      process.kill(-g, 0);
      return false;
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'ESRCH';
    }
  };
  for (const g of all) await until(() => esrch(g), `kill(-${g}, 0) failing with ESRCH`, timeoutMs);
  if (living.length > 0) throw new Error(`process groups outlived their specs: ${living.join(', ')}`);
}
