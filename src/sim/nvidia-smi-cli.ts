#!/usr/bin/env node
// `nvidia-smi` of a simulated GPU node, so the agent's real discovery runs on a machine
// without GPUs. Point `nvidia_smi` at a script that sets the environment and execs this.
//
// LLMGW_SIM_GPUS: how many GPUs (default 4, at most 64), all H100 80GB HBM3.
// LLMGW_SIM_NODE: the node's name, which seeds the GPUs' UUIDs (default: sim-node).
import { answer, MAX_SIM_GPUS } from './nvidia-smi.js';

function main(): number {
  const raw = process.env.LLMGW_SIM_GPUS ?? '4';
  const gpus = Number(raw);
  if (!Number.isInteger(gpus) || gpus < 1 || gpus > MAX_SIM_GPUS) {
    process.stderr.write(`simulated nvidia-smi: LLMGW_SIM_GPUS must be a whole number from 1 to ${MAX_SIM_GPUS}, not '${raw}'\n`);
    return 2;
  }
  const node = process.env.LLMGW_SIM_NODE || 'sim-node';
  const a = answer(process.argv.slice(2), { node, gpus });
  process.stdout.write(a.stdout);
  process.stderr.write(a.stderr);
  return a.code;
}

process.exitCode = main();
