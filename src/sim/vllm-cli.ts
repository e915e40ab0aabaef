#!/usr/bin/env node
// `llmgw-vllm-sim`: a stand-in for the `vllm` executable, so an agent runs a fleet on a
// machine without GPUs. Set `engines.vllm` to it and the agent's vLLM adapter launches it
// as it would vLLM; it serves the sim engine's OpenAI API and vLLM metrics on the port it
// is given, under the served name it is given.
//
// LLMGW_SIM_SPEED: the sim's time factor (default 1: as fast as one H100).
// LLMGW_SIM_LOAD_MS: how long it "loads weights" before opening the port (default 0).
//
// No SIGTERM handler, on purpose: like vLLM, it dies at once and cuts what is in flight,
// which is why the agent drains a shard before it signals.
import { createServer } from 'node:net';
import { LlmgwError } from '../errors.js';
import { startSimEngine } from './index.js';
import { parseVllmServeArgs } from './vllm-argv.js';

function envNumber(name: string, fallback: number, ok: (n: number) => boolean, want: string): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!ok(n)) throw new LlmgwError('LLMGW_INVALID_REQUEST', `vllm (sim): ${name} must be ${want}, not '${raw}'`);
  return n;
}

async function main(): Promise<void> {
  const args = parseVllmServeArgs(process.argv.slice(2));
  const speed = envNumber('LLMGW_SIM_SPEED', 1, (n) => Number.isFinite(n) && n > 0, 'a number > 0');
  const loadMs = envNumber('LLMGW_SIM_LOAD_MS', 0, (n) => Number.isInteger(n) && n >= 0, 'a whole number of ms ≥ 0');
  const log = (line: string): void => void process.stdout.write(`INFO ${new Date().toISOString()} ${line}\n`);
  log(`vllm (sim) serve ${args.model} as ${args.servedName}, tensor parallel ${args.tp}, speed ${speed}`);
  if (args.headless) {
    // A worker rank of a multi-node replica serves nothing; it lives until it is stopped.
    log('headless worker: serving no API');
    setInterval(() => {}, 1 << 30);
    return;
  }
  if (args.nnodes > 1 && args.nodeRank === 0 && args.master) {
    // Rank 0 of a multi-node replica hosts the rendezvous its workers dial (vLLM's
    // torch.distributed store): listening on it is what lets them start.
    const { host, port } = args.master;
    await new Promise<void>((resolve, reject) => createServer((s) => s.on('error', () => undefined)).once('error', reject).listen(port, host, resolve));
    log(`rendezvous for ${args.nnodes} nodes on ${host}:${port}`);
  }
  log(`loading weights (${loadMs} ms)`);
  await new Promise((r) => setTimeout(r, loadMs));
  const sim = await startSimEngine({
    host: args.host,
    port: args.port,
    model: args.servedName,
    flavor: 'vllm',
    speed,
    seed: args.seed,
    maxNumSeqs: args.maxNumSeqs,
    maxModelLen: args.maxModelLen,
    maxNumBatchedTokens: args.maxNumBatchedTokens,
    schedulingPolicy: args.schedulingPolicy,
    numGpuBlocks: args.numGpuBlocks,
  });
  log(`Starting vLLM API server on ${sim.url}`);
}

main().catch((err: unknown) => {
  process.stderr.write(`ERROR ${LlmgwError.from(err).message}\n`);
  process.exit(1);
});
