// Engine flags the launcher derives from the shard spec. Extra args may not set them:
// `--port` would move the server away from its health check, `--tensor-parallel-size`
// would undo the arithmetic validation checked, `--quantization` would slip FP8 past
// the compute-capability check. Value: the spec field that owns the flag, or null
// where the spec has no such field because the launcher does not support it.
import type { EngineKind } from '../../messages/shard-spec.js';

type Owners = Readonly<Record<string, string | null>>;

const VLLM: Owners = Object.freeze({
  '--model': 'model',
  '--served-model-name': 'servedName',
  '--host': 'httpHost',
  '--port': 'httpPort',
  '--tensor-parallel-size': 'tp',
  '-tp': 'tp',
  '--pipeline-parallel-size': 'pp',
  '-pp': 'pp',
  '--distributed-executor-backend': 'launchMode',
  '--nnodes': 'ranks',
  '--node-rank': 'rank',
  '--master-addr': 'leader',
  '--master-port': 'leader',
  '--headless': 'rank',
  '--dtype': 'dtype',
  '--quantization': 'quantization',
  '-q': 'quantization',
  '--data-parallel-size': null,
  '-dp': null,
  '--data-parallel-size-local': null,
  '--data-parallel-start-rank': null,
  '--data-parallel-address': null,
  '--data-parallel-rpc-port': null,
});

const SGLANG: Owners = Object.freeze({
  '--model-path': 'model',
  '--model': 'model',
  '--served-model-name': 'servedName',
  '--host': 'httpHost',
  '--port': 'httpPort',
  '--tensor-parallel-size': 'tp',
  '--tp-size': 'tp',
  '--pipeline-parallel-size': 'pp',
  '--pp-size': 'pp',
  '--dist-init-addr': 'leader',
  '--nccl-init-addr': 'leader',
  '--nnodes': 'ranks',
  '--node-rank': 'rank',
  '--dtype': 'dtype',
  '--quantization': 'quantization',
  '--data-parallel-size': null,
  '--dp-size': null,
});

/**
 * The reserved flags that `extraArgs` sets, each with why it may not, in order.
 *
 * `--name=value` counts as `--name`, and `_` as `-` (vLLM accepts `--tensor_parallel_size`).
 * SGLang parses with argparse's default abbreviations, so there any prefix of a
 * reserved flag counts too (`--tp` is `--tp-size`); vLLM's parser does not abbreviate.
 */
export function reservedFlagsIn(engine: EngineKind, args: readonly string[]): string[] {
  const owners = engine === 'vllm' ? VLLM : SGLANG;
  const out: string[] = [];
  for (const arg of args) {
    if (!arg.startsWith('-') || arg === '-' || arg === '--') continue;
    const eq = arg.indexOf('=');
    const raw = eq === -1 ? arg : arg.slice(0, eq);
    const name = raw.startsWith('--') ? `--${raw.slice(2).replace(/_/g, '-')}` : raw;
    let hit: string | undefined = Object.hasOwn(owners, name) ? name : undefined;
    if (hit === undefined && engine === 'sglang' && name.startsWith('--') && name.length > 3) {
      hit = Object.keys(owners).find((flag) => flag.startsWith(name));
    }
    if (hit === undefined) continue;
    const owner = owners[hit];
    const shown = hit === name ? name : `${name} (short for ${hit})`;
    out.push(
      owner === null
        ? `extra args may not set ${shown}: data parallelism is not supported by this launcher`
        : `extra args may not set ${shown}: it comes from the shard spec (${owner})`,
    );
  }
  return out;
}
