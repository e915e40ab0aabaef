// The batch limits of an engine the control plane launches, made explicit. Admission
// counts free slots from the engine's batch size and paces prefill to its per-step token
// budget; vLLM publishes neither, so an engine launched with its defaults had them
// learnt from its queue under load, and the admission bench shows what learning costs:
// engines of 64 fed long prompts were learnt at 18–43 (waiting on the step budget reads
// as a full batch) and bronze ran 0.51–0.80 of admission off over seven runs in each
// order, against 0.94–1.0 with the size and budget configured (`batch 64 long varied`
// and its `size configured` twin). The control plane knows the GPUs it places on, so it
// passes the values vLLM would choose there itself: the engine runs as it would have,
// and the router knows its batch from the first request. A profile that sets either
// flag keeps its own. SGLang publishes both in /server_info, so it is left as it is.
import type { FleetGpu } from '../messages/fleet.js';
import type { ShardSpec } from '../messages/shard-spec.js';

/** vLLM's per-GPU threshold for its larger defaults (`get_batch_defaults`): 70 GiB. */
const LARGE_GPU_MIB = 70 * 1024;

export interface BatchLimits {
  /** `--max-num-seqs`. */
  readonly maxNumSeqs: number;
  /** `--max-num-batched-tokens`. */
  readonly maxNumBatchedTokens: number;
}

/**
 * What `vllm serve` picks on `gpu` when neither flag is given (the OpenAI server's
 * defaults in vLLM's `get_batch_defaults`): 1024 sequences and 8192 tokens a step on a
 * GPU of at least 70 GiB other than an A100 (larger budgets cost the A100 throughput,
 * vLLM PR 17885), else 256 and 2048; passed explicitly, they hold whatever the
 * release's own defaults. Null when the agent did not report the card's memory.
 */
export function vllmBatchDefaults(gpu: Pick<FleetGpu, 'name' | 'memoryTotalMiB'>): BatchLimits | null {
  const mib = gpu.memoryTotalMiB;
  if (mib === null || mib === undefined) return null;
  const large = mib >= LARGE_GPU_MIB && !/a100/i.test(gpu.name ?? '');
  return large ? { maxNumSeqs: 1024, maxNumBatchedTokens: 8192 } : { maxNumSeqs: 256, maxNumBatchedTokens: 2048 };
}

/**
 * The flags to add to a profile's `args` so a vLLM engine on `gpus` (its rank 0's) runs
 * with explicit batch limits: each one the profile does not set itself, at vLLM's own
 * default for the smallest of those GPUs (no step budget where the profile turns chunked
 * prefill off). None for SGLang, or where a card's memory is not known.
 */
export function pinnedBatchArgs(engine: ShardSpec['engine'], args: readonly string[], gpus: readonly Pick<FleetGpu, 'name' | 'memoryTotalMiB'>[]): string[] {
  if (engine === 'sglang' || gpus.length === 0) return [];
  let limits: BatchLimits | null = null;
  for (const g of gpus) {
    const d = vllmBatchDefaults(g);
    if (d === null) return [];
    if (limits === null || d.maxNumSeqs < limits.maxNumSeqs) limits = d;
  }
  const out: string[] = [];
  if (flagValue(args, '--max-num-seqs') === undefined) out.push('--max-num-seqs', String(limits!.maxNumSeqs));
  // With chunked prefill off vLLM sizes the budget to the context length and refuses a smaller one.
  const unchunked = args.includes('--no-enable-chunked-prefill') || args.some((a) => /^--enable-chunked-prefill=(false|0)$/i.test(a));
  if (!unchunked && flagValue(args, '--max-num-batched-tokens') === undefined) out.push('--max-num-batched-tokens', String(limits!.maxNumBatchedTokens));
  return out;
}

/** The value an engine flag is given (`--flag V` or `--flag=V`; the last one wins, as in argparse), or undefined. */
export function flagValue(args: readonly string[], flag: string): string | undefined {
  let value: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const v = a === flag ? args[i + 1] : a.startsWith(`${flag}=`) ? a.slice(flag.length + 1) : undefined;
    if (v !== undefined) value = v;
  }
  return value;
}
