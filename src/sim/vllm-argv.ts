// What `vllm serve …` is asked to do, read from the argv the agent's vLLM adapter builds,
// for the sim engine standing in for vLLM (vllm-cli.ts). Pure: the executable around it
// owns the process, the environment and the port.
//
// vLLM takes hundreds of flags and the adapter passes operators' extra args through, so a
// flag the sim has no use for is skipped with its value, never refused: an engine that
// died on `--enable-prefix-caching` would make a shard fail for a reason vLLM never gives.
import { LlmgwError } from '../errors.js';

export interface VllmServeArgs {
  /** The model to load (SOURCE), and the served name when none is given, as in vLLM. */
  readonly model: string;
  readonly servedName: string;
  readonly host: string;
  readonly port: number;
  readonly tp: number;
  /** A worker rank of a multi-node replica: it serves no HTTP. */
  readonly headless: boolean;
  /** `--nnodes`: ranks of a multi-node replica (1 single-node). */
  readonly nnodes: number;
  readonly nodeRank: number;
  /** `--master-addr`/`--master-port`: the rendezvous rank 0 hosts; null single-node. */
  readonly master: { readonly host: string; readonly port: number } | null;
  readonly seed: number;
  /** Unset: the sim's default. */
  readonly maxNumSeqs: number | undefined;
  readonly maxModelLen: number | undefined;
  readonly maxNumBatchedTokens: number | undefined;
  /** `--num-gpu-blocks-override`. */
  readonly numGpuBlocks: number | undefined;
  readonly schedulingPolicy: 'fcfs' | 'priority';
}

/** Flags without a value: the next word is not theirs. */
const SWITCHES = new Set(['--headless', '--enable-prefix-caching', '--no-enable-prefix-caching', '--enforce-eager', '--trust-remote-code', '--disable-log-requests', '--disable-log-stats', '--enable-chunked-prefill', '--no-enable-chunked-prefill']);

/** `serve SOURCE [flags]`; throws LLMGW_INVALID_REQUEST naming what is wrong. */
export function parseVllmServeArgs(argv: readonly string[]): VllmServeArgs {
  const bad = (why: string): LlmgwError => new LlmgwError('LLMGW_INVALID_REQUEST', `vllm (sim): ${why}`);
  if (argv[0] !== 'serve') throw bad(`expected 'serve MODEL [flags]', got '${argv.join(' ')}'`);
  const flags = new Map<string, string>();
  let model: string | undefined;
  for (let i = 1; i < argv.length; i++) {
    const word = argv[i]!;
    if (!word.startsWith('-')) {
      if (model !== undefined) throw bad(`a second model '${word}' after '${model}'`);
      model = word;
      continue;
    }
    // vLLM accepts `--name=value` and `_` for `-` (`--tensor_parallel_size`).
    const eq = word.indexOf('=');
    const name = (eq < 0 ? word : word.slice(0, eq)).replace(/_/g, '-');
    if (eq >= 0) flags.set(name, word.slice(eq + 1));
    else if (SWITCHES.has(name) || argv[i + 1] === undefined || argv[i + 1]!.startsWith('-')) flags.set(name, '');
    else flags.set(name, argv[++i]!);
  }
  model ??= flags.get('--model');
  if (model === undefined || model === '') throw bad('no model: expected serve MODEL');

  const int = (names: readonly string[], min: number): number | undefined => {
    const name = names.find((n) => flags.has(n));
    if (name === undefined) return undefined;
    const raw = flags.get(name)!;
    const n = Number(raw);
    if (raw === '' || !Number.isInteger(n) || n < min) throw bad(`${name} must be a whole number ≥ ${min}, not '${raw}'`);
    return n;
  };
  const port = int(['--port'], 0) ?? 8000;
  const policy = flags.get('--scheduling-policy') ?? 'fcfs';
  if (policy !== 'fcfs' && policy !== 'priority') throw bad(`--scheduling-policy must be fcfs or priority, not '${policy}'`);
  if (port > 65_535) throw bad(`--port must be at most 65535, not ${port}`);
  return {
    model,
    servedName: flags.get('--served-model-name') || model,
    host: flags.get('--host') || '0.0.0.0',
    port,
    tp: int(['--tensor-parallel-size', '-tp'], 1) ?? 1,
    headless: flags.has('--headless'),
    nnodes: int(['--nnodes'], 1) ?? 1,
    nodeRank: int(['--node-rank'], 0) ?? 0,
    master: flags.has('--master-port') ? { host: flags.get('--master-addr') || '127.0.0.1', port: int(['--master-port'], 1)! } : null,
    seed: int(['--seed'], 0) ?? 0,
    maxNumSeqs: int(['--max-num-seqs'], 1),
    maxModelLen: int(['--max-model-len'], 1),
    maxNumBatchedTokens: int(['--max-num-batched-tokens'], 0),
    numGpuBlocks: int(['--num-gpu-blocks-override'], 1),
    schedulingPolicy: policy,
  };
}
