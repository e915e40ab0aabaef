// The nvidia-smi a simulated node's agent is pointed at: a script that gives the
// simulated nvidia-smi (nvidia-smi-cli.js) the node's GPU count and name, since the
// agent runs nvidia-smi with its arguments only.
import { chmodSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { SimNode } from './nvidia-smi.js';

export const NVIDIA_SMI_SIM = fileURLToPath(new URL('./nvidia-smi-cli.js', import.meta.url));

/**
 * Writes the script at `path` and returns `path`. It runs the simulator through this
 * process's Node, so it needs no executable bit on the built file (a plain `tsc` sets none).
 */
export function writeNvidiaSmiWrapper(path: string, sim: SimNode): string {
  const q = (s: string): string => `'${s.replaceAll("'", `'\\''`)}'`;
  writeFileSync(path, `#!/bin/sh\nLLMGW_SIM_GPUS=${sim.gpus} LLMGW_SIM_NODE=${q(sim.node)} exec ${q(process.execPath)} ${q(NVIDIA_SMI_SIM)} "$@"\n`);
  // writeFileSync's mode applies only to a new file.
  chmodSync(path, 0o755);
  return path;
}
