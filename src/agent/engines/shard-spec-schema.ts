// The shape of a ShardSpec arriving as JSON (the agent's control port, a state file left
// by a previous agent). The schema checks types only, so that validateShard, which
// checks meaning, never meets a null where it expects a GPU; together they are the one
// gate every spec from outside passes.
import { Ajv, type ValidateFunction } from 'ajv';
import { formatPath, fromAjvError } from '../../config/problems.js';
import { ENGINE_KINDS, VLLM_LAUNCH_MODES, type ShardSpec } from '../../messages/shard-spec.js';
import { validateShard } from './validate.js';

const str = { type: 'string' } as const;
const int = { type: 'integer' } as const;
const strings = { type: 'array', items: str } as const;

const shardSpecSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['replica', 'model', 'servedName', 'engine', 'rank', 'ranks', 'tp', 'pp', 'gpus', 'httpPort'],
  properties: {
    replica: str,
    model: str,
    servedName: str,
    engine: { type: 'string', enum: [...ENGINE_KINDS] },
    launchMode: { type: 'string', enum: [...VLLM_LAUNCH_MODES] },
    rank: int,
    ranks: int,
    tp: int,
    pp: int,
    gpus: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['index', 'class', 'computeCapability'],
        properties: { index: int, class: str, computeCapability: str },
      },
    },
    nodeIp: str,
    leader: { type: 'object', additionalProperties: false, required: ['ip', 'port'], properties: { ip: str, port: int } },
    httpHost: str,
    httpPort: int,
    transport: {
      type: 'object',
      additionalProperties: false,
      required: ['kind'],
      properties: { kind: { type: 'string', enum: ['fabric', 'socket'] }, fabric: str, linkLayer: { type: 'string', enum: ['InfiniBand', 'Ethernet'] }, hcas: strings },
    },
    mgmtInterface: str,
    dtype: str,
    quantization: str,
    extraArgs: strings,
    env: { type: 'object', additionalProperties: str },
  },
} as const;

let validator: ValidateFunction | undefined;

/**
 * Every reason `value` is not a launchable ShardSpec, each naming its field
 * (`gpus[0].index: must be an integer, got null`); empty when it is one.
 */
export function shardSpecProblems(value: unknown): string[] {
  validator ??= new Ajv({ allErrors: true, verbose: true, strict: true }).compile(shardSpecSchema);
  if (!validator(value)) {
    return (validator.errors ?? []).map(fromAjvError).map((p) => (p.segments.length > 0 ? `${formatPath(p.segments)}: ${p.message}` : p.message));
  }
  return validateShard(value as ShardSpec);
}
