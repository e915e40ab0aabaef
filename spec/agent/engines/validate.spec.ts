import { test } from '../../support/uvu.js';
import * as assert from 'uvu/assert';
import {
  assertValidShard,
  buildLaunch,
  isFp8Quantization,
  parseComputeCapability,
  validateShard,
  type ShardGpu,
  type ShardSpec,
} from '../../../src/agent/engines/index.js';
import { LlmgwError } from '../../../src/errors.js';
import { a100, h100, l40s, multi, range, single } from './fixtures.js';

/** Casts for what the type system would refuse but the wire can deliver. */
const loose = <T>(v: unknown): T => v as T;
const ib = (hcas: string[]) => ({ kind: 'fabric' as const, fabric: 'ib-a', linkLayer: 'InfiniBand' as const, hcas });

test('valid specs pass: every engine, mode and rank', () => {
  assert.equal(validateShard(single()), []);
  assert.equal(validateShard(single({ engine: 'sglang' })), []);
  for (const rank of [0, 1]) {
    assert.equal(validateShard(multi(rank)), []);
    assert.equal(validateShard(multi(rank, { launchMode: 'mp' })), []);
    assert.equal(validateShard(multi(rank, { engine: 'sglang', launchMode: undefined })), []);
    assert.equal(validateShard(multi(rank, { transport: { kind: 'socket' } })), []);
  }
});

test('identity: replica, model and served name must be present', () => {
  assert.equal(validateShard(single({ replica: '', model: ' ', servedName: '' })), [
    'replica id is empty',
    'model path is empty',
    'served name is empty; readiness is /v1/models listing it',
  ]);
});

test('an unknown engine is named with the known ones', () => {
  assert.equal(validateShard(single({ engine: loose('trtllm') })), ["engine 'trtllm' is not one of vllm, sglang"]);
});

test('parallel degrees and rank must be in range', () => {
  assert.equal(validateShard(single({ tp: 0 })), ['tp must be a positive integer, got 0']);
  assert.equal(validateShard(single({ pp: 1.5 })), ['pp must be a positive integer, got 1.5']);
  assert.equal(validateShard(single({ ranks: 0 })), ['ranks (nodes) must be a positive integer, got 0']);
  assert.equal(validateShard(multi(2)), ['rank 2 is outside 0..1']);
  assert.equal(validateShard(multi(-1, { nodeIp: '10.0.0.9' })), ['rank -1 is outside 0..1']);
  assert.equal(validateShard(multi(1, { rank: 0.5 })), ['rank must be an integer, got 0.5']);
});

test('GPUs: at least one, each index once, each with a class', () => {
  assert.equal(validateShard(single({ gpus: [] })), ['no GPUs are assigned to the shard on this node']);
  assert.equal(validateShard(single({ gpus: [h100(0), h100(1), h100(1), h100(2)] })), ['GPU 1 is assigned twice']);
  assert.equal(validateShard(single({ gpus: [h100(-1), h100(1), h100(2), h100(3)] })), ['GPU index -1 is not a non-negative integer']);
  assert.equal(validateShard(single({ gpus: [h100(0), h100(1), h100(2), { index: 3, class: '', computeCapability: '9.0' }] })), [
    'GPU 3 has no class',
  ]);
});

test('a tensor-parallel group may not mix GPU classes, and the message says which is which', () => {
  assert.equal(validateShard(single({ gpus: [h100(0), h100(1), a100(2), a100(3)] })), [
    'a tensor-parallel group may not mix GPU classes: h100-80g (GPUs 0, 1), a100-80g (GPUs 2, 3)',
  ]);
  assert.equal(validateShard(single({ tp: 2, gpus: [l40s(0), h100(5)] })), [
    'a tensor-parallel group may not mix GPU classes: l40s-45g (GPU 0), h100-80g (GPU 5)',
  ]);
});

test('nodes × GPUs per node must equal tp × pp', () => {
  assert.equal(validateShard(single({ tp: 8 })), ['1 node × 4 GPUs = 4, but tp 8 × pp 1 = 8: each node needs 8']);
  assert.equal(validateShard(single({ tp: 1, gpus: [h100(0), h100(1)] })), ['1 node × 2 GPUs = 2, but tp 1 × pp 1 = 1: each node needs 1']);
  assert.equal(validateShard(multi(0, { tp: 4, pp: 1 })), ['2 nodes × 8 GPUs = 16, but tp 4 × pp 1 = 4: each node needs 2']);
  assert.equal(validateShard(multi(1, { tp: 3, pp: 1, gpus: [h100(0)] })), ['tp 3 × pp 1 = 3 GPUs cannot be split evenly over 2 nodes']);
  // TP may span nodes: 2 nodes × 8 GPUs is TP 16 just as well as TP 8 × PP 2.
  assert.equal(validateShard(multi(1, { tp: 16, pp: 1 })), []);
});

test('FP8 is refused below compute capability 8.9, naming every GPU that is too old', () => {
  const spec = single({ gpus: range(0, 4).map(a100), quantization: 'fp8' });
  assert.equal(validateShard(spec), [
    "quantization 'fp8' needs compute capability 8.9 or newer (Ada, Hopper); " +
      'GPU 0 (a100-80g) has 8.0, GPU 1 (a100-80g) has 8.0, GPU 2 (a100-80g) has 8.0, GPU 3 (a100-80g) has 8.0',
  ]);
  assert.equal(validateShard({ ...spec, quantization: 'fbgemm_fp8' }).length, 1);
  assert.equal(validateShard({ ...spec, quantization: 'awq' }), []);
  assert.equal(validateShard({ ...spec, quantization: undefined }), []);
});

test('FP8 is accepted on Ada (8.9), Hopper (9.0) and on 10.0, compared as a version, not as text', () => {
  assert.equal(validateShard(single({ gpus: range(0, 4).map(l40s), quantization: 'fp8' })), []);
  assert.equal(validateShard(single({ quantization: 'fp8' })), []);
  const blackwell = (i: number): ShardGpu => ({ index: i, class: 'b200-180g', computeCapability: '10.0' });
  assert.equal(validateShard(single({ gpus: range(0, 4).map(blackwell), quantization: 'fp8' })), []);
});

test('FP8 with a compute capability nvidia-smi could not give is refused, not assumed', () => {
  const gpus = [h100(0), h100(1), h100(2), { index: 3, class: 'h100-80g', computeCapability: '[N/A]' }];
  assert.equal(validateShard(single({ gpus, quantization: 'fp8' })), [
    "quantization 'fp8' needs compute capability 8.9 or newer (Ada, Hopper), which cannot be confirmed: GPU 3 (h100-80g) reports '[N/A]'",
  ]);
  // Without FP8 the capability does not matter.
  assert.equal(validateShard(single({ gpus })), []);
});

test('an empty dtype or quantization is a mistake, not a default', () => {
  assert.equal(validateShard(single({ dtype: '', quantization: '' })), [
    'quantization is empty; leave it out instead',
    'dtype is empty; leave it out instead',
  ]);
});

test('HTTP port and host', () => {
  assert.equal(validateShard(single({ httpPort: 0 })), ['HTTP port 0 is not a port (1-65535)']);
  assert.equal(validateShard(single({ httpPort: 70000 })), ['HTTP port 70000 is not a port (1-65535)']);
  assert.equal(validateShard(single({ httpHost: '' })), ["HTTP host '' is not an address"]);
});

test('multi-node: the leader rendezvous must be present and dialable', () => {
  assert.equal(validateShard(multi(1, { leader: undefined })), [
    "a 2-node shard needs the leader's rendezvous address (rank 0's management IP and port)",
  ]);
  assert.equal(validateShard(multi(1, { leader: { ip: 'head-0', port: 20001 } })), ["leader address 'head-0' is not an IP address other nodes can dial"]);
  assert.equal(validateShard(multi(1, { leader: { ip: '0.0.0.0', port: 20001 } })), ["leader address '0.0.0.0' is not an IP address other nodes can dial"]);
  assert.equal(validateShard(multi(1, { leader: { ip: '10.0.0.10', port: 0 } })), ['leader rendezvous port 0 is not a port (1-65535)']);
});

test("multi-node: this node's IP is required, and on rank 0 it is the leader address", () => {
  assert.equal(validateShard(multi(1, { nodeIp: undefined })), ["a 2-node shard needs this node's IP (Ray and vLLM identify each node by it)"]);
  assert.equal(validateShard(multi(1, { nodeIp: '::' })), ["node IP '::' is not an IP address other nodes can dial"]);
  assert.equal(validateShard(multi(0, { nodeIp: '10.0.0.11' })), [
    'rank 0 hosts the rendezvous, so its node IP 10.0.0.11 must be the leader address 10.0.0.10',
  ]);
});

test('multi-node: rank 0 cannot open the rendezvous and the API on one port', () => {
  assert.equal(validateShard(multi(0, { httpPort: 20001 })), ['the rendezvous port 20001 is also the HTTP port; rank 0 opens both']);
  // On a worker the HTTP port is never opened, so the same number is harmless there.
  assert.equal(validateShard(multi(1, { httpPort: 20001 })), []);
});

test('multi-node: the management interface is required and must be a plain interface name', () => {
  assert.equal(validateShard(multi(1, { mgmtInterface: undefined })), ['a 2-node shard needs the management interface: NCCL and Gloo bootstrap over it']);
  assert.equal(validateShard(multi(1, { mgmtInterface: '=eth0' })), ["management interface '=eth0' is not an interface name"]);
  assert.equal(validateShard(multi(1, { mgmtInterface: 'a-very-long-interface-name' })), [
    "management interface 'a-very-long-interface-name' is not an interface name",
  ]);
});

test('multi-node: a transport is required; socket must be said, never implied by a missing HCA list', () => {
  assert.equal(validateShard(multi(1, { transport: undefined })), [
    "a 2-node shard needs a transport: a fabric with its HCAs, or 'socket' to run NCCL over TCP on purpose",
  ]);
  assert.equal(validateShard(multi(1, { transport: ib([]) })), [
    "fabric 'ib-a' lists no HCAs on this node: NCCL would pick adapters itself, possibly on another fabric (use transport 'socket' to run without RDMA on purpose)",
  ]);
  assert.equal(validateShard(multi(1, { transport: loose({ kind: 'tcp' }) })), ["transport kind 'tcp' is not 'fabric' or 'socket'"]);
});

test('multi-node: HCA names are adapter names, each once; the fabric has a name and a known link layer', () => {
  assert.equal(validateShard(multi(1, { transport: ib(['mlx5_0', '^mlx5_1']) })), [
    "HCA '^mlx5_1' is not an adapter name (mlx5_0, or mlx5_0:1 for a port)",
  ]);
  assert.equal(validateShard(multi(1, { transport: ib(['mlx5_0,mlx5_1']) })), [
    "HCA 'mlx5_0,mlx5_1' is not an adapter name (mlx5_0, or mlx5_0:1 for a port)",
  ]);
  assert.equal(validateShard(multi(1, { transport: ib(['mlx5_0', 'mlx5_0']) })), ['HCA mlx5_0 is listed twice']);
  assert.equal(validateShard(multi(1, { transport: { kind: 'fabric', fabric: '', linkLayer: 'InfiniBand', hcas: ['mlx5_0'] } })), ['the fabric has no name']);
  assert.equal(validateShard(multi(1, { transport: loose({ kind: 'fabric', fabric: 'x', linkLayer: 'Unknown', hcas: ['mlx5_0'] }) })), [
    "fabric link layer 'Unknown' is not InfiniBand or Ethernet (RoCE)",
  ]);
});

test('multi-node vLLM needs an explicit launch mode; SGLang and single node do not', () => {
  assert.equal(validateShard(multi(1, { launchMode: undefined })), [
    'a multi-node vLLM shard needs a launch mode: ray or mp (which works depends on the vLLM version)',
  ]);
  assert.equal(validateShard(multi(1, { launchMode: loose('k8s') })), ["launch mode 'k8s' is not one of ray, mp"]);
  assert.equal(validateShard(multi(1, { engine: 'sglang', launchMode: undefined })), []);
  assert.equal(validateShard(single({ launchMode: undefined })), []);
});

test('single node: leader, node IP, transport and interface are not required', () => {
  assert.equal(validateShard(single({ leader: undefined, nodeIp: undefined, transport: undefined, mgmtInterface: undefined })), []);
});

test('vLLM extra args may not set what the spec sets, in any spelling vLLM accepts', () => {
  const extraArgs = ['--port', '9000', '--tensor_parallel_size=4', '-tp', '2', '--quantization=fp8', '--data-parallel-size', '2', '--max-model-len', '8192'];
  assert.equal(validateShard(single({ extraArgs })), [
    'extra args may not set --port: it comes from the shard spec (httpPort)',
    'extra args may not set --tensor-parallel-size: it comes from the shard spec (tp)',
    'extra args may not set -tp: it comes from the shard spec (tp)',
    'extra args may not set --quantization: it comes from the shard spec (quantization)',
    'extra args may not set --data-parallel-size: data parallelism is not supported by this launcher',
  ]);
  assert.equal(validateShard(multi(1, { launchMode: 'mp', extraArgs: ['--headless', '--master-port=1'] })), [
    'extra args may not set --headless: it comes from the shard spec (rank)',
    'extra args may not set --master-port: it comes from the shard spec (leader)',
  ]);
});

test('SGLang extra args: argparse abbreviations of reserved flags count as the flag', () => {
  assert.equal(validateShard(single({ engine: 'sglang', extraArgs: ['--tp', '8', '--dist-init-addr=1.2.3.4:5', '--served-model', 'x', '--mem-fraction-static', '0.8'] })), [
    'extra args may not set --tp (short for --tp-size): it comes from the shard spec (tp)',
    'extra args may not set --dist-init-addr: it comes from the shard spec (leader)',
    'extra args may not set --served-model (short for --served-model-name): it comes from the shard spec (servedName)',
  ]);
  // A flag that only looks alike is fine: --enable-metrics is not a prefix of anything reserved.
  assert.equal(validateShard(single({ engine: 'sglang', extraArgs: ['--enable-metrics', '--context-length', '8192'] })), []);
});

test('env overrides may not undo placement; other variables are fine', () => {
  assert.equal(validateShard(single({ env: { CUDA_VISIBLE_DEVICES: '0', NCCL_IB_HCA: 'mlx5', VLLM_HOST_IP: '1.2.3.4', NCCL_DEBUG: 'INFO' } })), [
    'env may not set CUDA_VISIBLE_DEVICES: it comes from the shard spec (gpus)',
    'env may not set NCCL_IB_HCA: it comes from the shard spec (transport)',
    'env may not set VLLM_HOST_IP: it comes from the shard spec (nodeIp)',
  ]);
  assert.equal(validateShard(single({ env: loose({ '1BAD': 'x', GOOD: 5, NUL: 'a\0b' }) })), [
    "env name '1BAD' is not a variable name",
    'env GOOD must be a string, got 5',
    'env NUL contains a NUL byte',
  ]);
});

test('every problem is reported at once, not just the first', () => {
  const spec: ShardSpec = multi(1, { servedName: '', transport: ib([]), mgmtInterface: undefined, quantization: 'fp8', gpus: range(0, 8).map(a100) });
  assert.is(validateShard(spec).length, 4);
});

test('assertValidShard and buildLaunch throw LLMGW_SHARD_INVALID carrying every reason', () => {
  const spec = single({ tp: 8, servedName: '' });
  const expected = ['served name is empty; readiness is /v1/models listing it', '1 node × 4 GPUs = 4, but tp 8 × pp 1 = 8: each node needs 8'];
  for (const run of [() => assertValidShard(spec), () => buildLaunch(spec)]) {
    try {
      run();
      assert.unreachable('an invalid spec was accepted');
    } catch (err) {
      assert.instance(err, LlmgwError);
      const e = err as LlmgwError;
      assert.is(e.code, 'LLMGW_SHARD_INVALID');
      assert.is(e.message, `shard of replica llama-70b-1 rank 0 cannot be launched: ${expected.join('; ')}`);
      assert.equal(e.details, { problems: expected });
    }
  }
  assertValidShard(single()); // and a valid one does not throw
});

test('compute capability parsing and FP8 detection', () => {
  assert.equal(parseComputeCapability('9.0'), [9, 0]);
  assert.equal(parseComputeCapability(' 10.0 '), [10, 0]);
  assert.is(parseComputeCapability('[N/A]'), null);
  assert.is(parseComputeCapability('9'), null);
  for (const q of ['fp8', 'FP8', 'fbgemm_fp8', 'ptpc_fp8', 'w8a8_fp8', 'modelopt_fp8']) assert.ok(isFp8Quantization(q), q);
  for (const q of [undefined, 'awq', 'gptq', 'bitsandbytes', 'w8a8_int8']) assert.not.ok(isFp8Quantization(q), String(q));
});

test.run();
