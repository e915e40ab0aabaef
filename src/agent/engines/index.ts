// Engine launch adapters: a shard spec in, the commands that make up the shard and how
// its readiness is judged out. Pure: nothing here starts a process.
import { LlmgwError } from '../../errors.js';
import { httpBase, localDialHost } from './address.js';
import { sglangCommands } from './sglang.js';
import type { ShardSpec } from '../../messages/shard-spec.js';
import { DEFAULT_LAUNCH_OPTIONS, servesHttp, type HealthCheck, type Launch, type LaunchCommand, type LaunchOptions } from './shard-spec.js';
import { assertValidShard } from './validate.js';
import { vllmCommands } from './vllm.js';

export * from '../../messages/shard-spec.js';
export * from './shard-spec.js';
export { FP8_MIN_COMPUTE_CAPABILITY, assertValidShard, isFp8Quantization, parseComputeCapability, validateShard } from './validate.js';
export { RESERVED_ENV, ROCE_GID_INDEX } from './env.js';
export { reservedFlagsIn } from './flags.js';
export { vllmCommands } from './vllm.js';
export { sglangCommands } from './sglang.js';

/**
 * Validates the spec (throwing `LLMGW_SHARD_INVALID` with every reason) and builds its
 * commands. Only the rank that serves HTTP gets a health check; a worker has no port to
 * check and is judged by staying alive.
 */
export function buildLaunch(spec: ShardSpec, options: Partial<LaunchOptions> = {}): Launch {
  assertValidShard(spec);
  // An option given as undefined (an unset config key) keeps its default.
  const given = Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined));
  const opts: LaunchOptions = { ...DEFAULT_LAUNCH_OPTIONS, ...given };
  const commands: LaunchCommand[] = spec.engine === 'vllm' ? vllmCommands(spec, opts) : sglangCommands(spec, opts);

  // The shape the supervisor relies on: sidecars serve nothing, and the rank that serves
  // HTTP does so from its last command — the one whose exit is the shard's.
  const serving = commands.filter((c) => c.servesHttp);
  const expectServing = servesHttp(spec);
  if (serving.length !== (expectServing ? 1 : 0) || (expectServing && !commands.at(-1)!.servesHttp)) {
    throw new LlmgwError('LLMGW_HANDLER_FAILED', `launch of ${spec.engine} rank ${spec.rank} has ${serving.length} HTTP-serving commands`);
  }

  const healthCheck: HealthCheck | null = expectServing
    ? { url: `${httpBase(localDialHost(spec.httpHost ?? '0.0.0.0'), spec.httpPort)}/v1/models`, servedName: spec.servedName }
    : null;
  return { commands, healthCheck };
}
