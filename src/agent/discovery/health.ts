// What keeps a GPU out of placement. Each problem is one sentence naming the card,
// what is wrong and what an operator does about it; the control plane shows them as
// they are ("every cannot explains itself").
import type { ComputeApp, SmiGpu } from './nvidia-smi.js';

/**
 * Memory in use that no listed process accounts for, written off as driver overhead
 * below this. Above it, something the agent cannot see holds the card.
 */
export const UNACCOUNTED_MEMORY_TOLERANCE_MIB = 512;

export interface HealthInput {
  readonly gpu: SmiGpu;
  /** The compute processes nvidia-smi listed (all GPUs), or why they could not be listed. */
  readonly apps: readonly ComputeApp[] | { readonly error: string };
  /** PIDs of the engines this agent started; any other process on a card is foreign. */
  readonly ours: ReadonlySet<number>;
}

/**
 * The problems of one GPU, in a stable order: device error, ECC, foreign processes,
 * memory nobody accounts for. An unknown temperature or an ECC count nvidia-smi cannot
 * give (ECC off, consumer cards) is not a problem.
 */
export function gpuProblems({ gpu, apps, ours }: HealthInput): string[] {
  const i = gpu.index;
  const problems: string[] = [];
  if (gpu.deviceError !== null) {
    problems.push(`GPU ${i}: nvidia-smi reports ${gpu.deviceError}: reset it (nvidia-smi -r -i ${i}) or reboot the node, and check dmesg for Xid errors`);
  }
  if (gpu.eccUncorrected !== null && gpu.eccUncorrected > 0) {
    const n = gpu.eccUncorrected;
    problems.push(
      `GPU ${i} has ${n} uncorrected ECC error${n === 1 ? '' : 's'} since the driver loaded: drain it, reset it (nvidia-smi -r -i ${i}), and replace the card if they come back`,
    );
  }
  if ('error' in apps) {
    problems.push(`GPU ${i}: the processes using it could not be listed (${apps.error}), so it cannot be shown to be free: fix nvidia-smi --query-compute-apps, then discover again`);
    return problems;
  }
  const mine = gpu.uuid === null ? [] : apps.filter((a) => a.gpuUuid === gpu.uuid);
  for (const app of mine) {
    if (ours.has(app.pid)) continue;
    const mem = app.usedMemoryMiB === null ? '' : `, ${app.usedMemoryMiB} MiB`;
    problems.push(`GPU ${i} is used by pid ${app.pid} (${app.processName}${mem}), which llmgw did not start: stop it or move it to another card`);
  }
  if (gpu.memoryUsedMiB !== null && mine.every((a) => a.usedMemoryMiB !== null)) {
    const accounted = mine.reduce((sum, a) => sum + a.usedMemoryMiB!, 0);
    const unaccounted = gpu.memoryUsedMiB - accounted;
    if (unaccounted > UNACCOUNTED_MEMORY_TOLERANCE_MIB) {
      problems.push(
        `GPU ${i} has ${unaccounted} MiB in use that no listed process holds: a process in another container or PID namespace probably does; find it with nvidia-smi on the host and stop it`,
      );
    }
  }
  return problems;
}
