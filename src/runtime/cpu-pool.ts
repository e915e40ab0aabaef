import { availableParallelism } from 'node:os';
import type { TransferListItem } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { LlmgwError } from '../errors.js';
import type { CpuRunner } from './actor.js';

/**
 * Stateless CPU work (prefix hashing and the like) on a piscina pool owned by the main
 * thread. Actors on workers reach it through a system request; the pool starts on first
 * use and lets idle threads go, so a process that never hashes pays nothing.
 */
export class CpuPool implements CpuRunner {
  private pool: Piscina | undefined;

  constructor(
    private readonly filename: string,
    private readonly maxThreads = Math.max(1, availableParallelism() - 1),
  ) {}

  async run<R>(task: string, data: unknown, transfer?: TransferListItem[]): Promise<R> {
    this.pool ??= new Piscina({ filename: this.filename, minThreads: 1, maxThreads: this.maxThreads, idleTimeout: 30_000 });
    try {
      return (await this.pool.run(data, { name: task, transferList: transfer as never })) as R;
    } catch (err) {
      // Errors lose their class across the pool's boundary; give them ours back.
      throw LlmgwError.from(err);
    }
  }

  async destroy(): Promise<void> {
    const pool = this.pool;
    this.pool = undefined;
    await pool?.destroy();
  }
}
