import { create, fromBinary, isFieldSet, toBinary } from '@bufbuild/protobuf';
import * as assert from 'uvu/assert';
import { LlmgwError } from '../../src/errors.js';
import { Engine, LaunchMode, LinkLayer, ShardSpecSchema, ShardTransportSchema, type ShardSpec as WireShardSpec } from '../../src/messages/gen/llmgw/agent/v1/agent_pb.js';
import type { ShardSpec } from '../../src/messages/shard-spec.js';
import { shardSpecFromWire, shardSpecToWire } from '../../src/messages/shard-spec-wire.js';
import { suite } from '../support/uvu.js';

// Every field of the launch adapters' ShardSpec: `Required` makes a field added to the
// type a compile error here until it is given a value, and so a field the mapping
// must carry.
const FULL: Required<ShardSpec> = {
  replica: 'llama-70b-r0',
  model: '/models/llama-3.1-70b',
  servedName: 'llama-70b',
  engine: 'vllm',
  launchMode: 'mp',
  rank: 1,
  ranks: 2,
  tp: 8,
  pp: 2,
  gpus: [0, 1, 2, 3, 4, 5, 6, 7].map((index) => ({ index, class: 'h100-80g', computeCapability: '9.0' })),
  nodeIp: '10.0.0.12',
  leader: { ip: '10.0.0.11', port: 29_517 },
  httpHost: '0.0.0.0',
  httpPort: 8001,
  transport: { kind: 'fabric', fabric: 'ib-a', linkLayer: 'InfiniBand', hcas: ['mlx5_0', 'mlx5_1'] },
  mgmtInterface: 'eth0',
  dtype: 'bfloat16',
  quantization: 'fp8',
  extraArgs: ['--max-num-seqs', '256'],
  env: { VLLM_LOGGING_LEVEL: 'DEBUG' },
};

const MINIMAL: ShardSpec = {
  replica: 'qwen-7b-r3',
  model: 'Qwen/Qwen2.5-7B-Instruct',
  servedName: 'qwen',
  engine: 'sglang',
  rank: 0,
  ranks: 1,
  tp: 1,
  pp: 1,
  gpus: [{ index: 3, class: 'l40s-48g', computeCapability: '8.9' }],
  httpPort: 30_000,
};

/** Through the wire type and its bytes, as the stream carries it. */
const overTheWire = (spec: ShardSpec): ShardSpec => shardSpecFromWire(fromBinary(ShardSpecSchema, toBinary(ShardSpecSchema, shardSpecToWire(spec))));

const test = suite('shard spec on the wire');

test('a spec with every field set comes back equal, through the bytes', () => {
  assert.equal(overTheWire(FULL), FULL);
});

test('a spec with every optional field absent comes back with them absent, not undefined', () => {
  const back = overTheWire(MINIMAL);
  assert.equal(back, MINIMAL);
  assert.equal(Object.keys(back).sort(), Object.keys(MINIMAL).sort());
});

test('each enum value and transport kind round-trips', () => {
  const variants: ShardSpec[] = [
    { ...FULL, engine: 'sglang' },
    { ...FULL, launchMode: 'ray' },
    { ...FULL, transport: { kind: 'socket' } },
    { ...FULL, transport: { kind: 'fabric', fabric: 'roce-1', linkLayer: 'Ethernet', hcas: ['mlx5_4'] } },
  ];
  for (const v of variants) assert.equal(overTheWire(v), v);
});

test('the full spec sets every field of the wire message: the proto has nothing the type lacks', () => {
  const wire = shardSpecToWire(FULL);
  const unset = ShardSpecSchema.fields.filter((f) => !isFieldSet(wire, f)).map((f) => f.name);
  assert.equal(unset, []);
  assert.ok(ShardSpecSchema.fields.length >= Object.keys(FULL).length, 'every field of the type has a wire field');
});

test('what the type cannot hold is refused, naming the field', () => {
  const refused = (w: WireShardSpec, field: string): void => {
    try {
      shardSpecFromWire(w);
    } catch (err) {
      assert.instance(err, LlmgwError);
      assert.is((err as LlmgwError).code, 'LLMGW_SHARD_INVALID');
      assert.equal((err as LlmgwError).details, { field });
      return;
    }
    assert.unreachable(`accepted a spec with a bad ${field}`);
  };
  const minimal = (edit: (w: WireShardSpec) => void): WireShardSpec => {
    const w = shardSpecToWire(MINIMAL);
    edit(w);
    return w;
  };
  refused(minimal((w) => (w.engine = Engine.UNSPECIFIED)), 'engine');
  refused(minimal((w) => (w.launchMode = 7 as LaunchMode)), 'launch_mode');
  refused(minimal((w) => (w.transport = create(ShardTransportSchema))), 'transport');
  refused(
    minimal((w) => (w.transport = create(ShardTransportSchema, { kind: { case: 'fabric', value: { fabric: 'ib-a', linkLayer: LinkLayer.UNSPECIFIED, hcas: ['mlx5_0'] } } }))),
    'transport.fabric.link_layer',
  );
});

test.run();
