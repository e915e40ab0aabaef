// One process of a running shard, as the shard sees it: who it is, and a way to learn
// that it is gone. A process this agent started is its child and reports its own exit;
// one adopted from a previous agent is not, so it is watched by polling its fingerprint.
import type { ChildProcess } from 'node:child_process';
import { fingerprintMismatch, readFingerprint, type ProcessFingerprint } from './fingerprint.js';

export interface ShardProcess {
  readonly role: 'sidecar' | 'engine';
  readonly argv0: string;
  readonly pid: number;
  readonly pgid: number;
  /** Null when the process died before it could be read. */
  readonly fingerprint: ProcessFingerprint | null;
  /** Calls `onGone` once, with why in words, when the process is gone. */
  watch(onGone: (why: string) => void): void;
  /** Re-reads the command line (an interpreter or a retitle may have changed it since exec). */
  refresh(): void;
  /** Stops watching; the process itself is left as it is. */
  release(): void;
}

export class SpawnedProcess implements ShardProcess {
  readonly pid: number;
  readonly pgid: number;
  fingerprint: ProcessFingerprint | null;

  constructor(
    readonly role: 'sidecar' | 'engine',
    readonly argv0: string,
    private readonly child: ChildProcess,
  ) {
    this.pid = child.pid!;
    this.pgid = this.pid; // it leads its own group (spawnGroup)
    this.fingerprint = readFingerprint(this.pid);
  }

  watch(onGone: (why: string) => void): void {
    this.child.once('exit', (code, signal) => onGone(code !== null ? `exited with code ${code}` : `was killed by ${signal}`));
  }

  refresh(): void {
    const now = readFingerprint(this.pid);
    if (now !== null && now.startTime === this.fingerprint?.startTime) this.fingerprint = now;
  }

  release(): void {
    this.child.removeAllListeners('exit');
    // The agent may exit while this process runs on (agent shutdown leaves engines running).
    this.child.unref();
  }
}

export class AdoptedProcess implements ShardProcess {
  readonly pid: number;
  readonly pgid: number;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    readonly role: 'sidecar' | 'engine',
    readonly argv0: string,
    readonly fingerprint: ProcessFingerprint,
    private readonly pollMs: number,
  ) {
    this.pid = fingerprint.pid;
    this.pgid = fingerprint.pgid;
  }

  watch(onGone: (why: string) => void): void {
    this.timer = setInterval(() => {
      const why = fingerprintMismatch(this.fingerprint, readFingerprint(this.pid));
      if (why === null) return;
      this.release();
      onGone(`exited (adopted, so its exit status is unknown: ${why})`);
    }, this.pollMs);
    this.timer.unref();
  }

  refresh(): void {
    // Adopted fingerprints were verified at adoption and are kept as recorded.
  }

  release(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }
}
