import { test } from '../../support/uvu.js';
import * as assert from 'uvu/assert';
import { buildLaunch, type ShardSpec } from '../../../src/agent/engines/index.js';
import { OPTS, fabricEnv, multi, single } from './fixtures.js';

const sg = (spec: ShardSpec): ShardSpec => ({ ...spec, engine: 'sglang', launchMode: undefined });

test('single node: one launch_server that serves HTTP with metrics on', () => {
  assert.equal(buildLaunch(sg(single()), OPTS).commands, [
    {
      argv: [
        '/opt/sglang/bin/python', '-m', 'sglang.launch_server',
        '--model-path', '/models/llama-3.3-70b',
        '--served-model-name', 'llama-3.3-70b',
        '--tp-size', '4',
        '--host', '0.0.0.0',
        '--port', '20000',
        '--enable-metrics',
      ],
      env: { CUDA_DEVICE_ORDER: 'PCI_BUS_ID', CUDA_VISIBLE_DEVICES: '0,1,2,3', NCCL_IB_DISABLE: '1' },
      servesHttp: true,
    },
  ]);
});

test('rank 0 of two: dist-init address, nnodes, node-rank 0; serves HTTP and waits for no one', () => {
  assert.equal(buildLaunch(sg(multi(0)), OPTS).commands, [
    {
      argv: [
        '/opt/sglang/bin/python', '-m', 'sglang.launch_server',
        '--model-path', '/models/deepseek-v3',
        '--served-model-name', 'deepseek-v3',
        '--tp-size', '8',
        '--pp-size', '2',
        '--dist-init-addr', '10.0.0.10:20001',
        '--nnodes', '2',
        '--node-rank', '0',
        '--host', '0.0.0.0',
        '--port', '20000',
        '--enable-metrics',
      ],
      env: fabricEnv(),
      servesHttp: true,
    },
  ]);
});

test('rank 1 of two: the same command with node-rank 1, no HTTP, waiting for the dist-init address', () => {
  const spec = sg(multi(1, { tp: 16, pp: 1, dtype: 'bfloat16', quantization: 'fp8', extraArgs: ['--mem-fraction-static', '0.85'] }));
  assert.equal(buildLaunch(spec, OPTS).commands, [
    {
      argv: [
        '/opt/sglang/bin/python', '-m', 'sglang.launch_server',
        '--model-path', '/models/deepseek-v3',
        '--served-model-name', 'deepseek-v3',
        '--tp-size', '16',
        '--dist-init-addr', '10.0.0.10:20001',
        '--nnodes', '2',
        '--node-rank', '1',
        '--host', '0.0.0.0',
        '--port', '20000',
        '--enable-metrics',
        '--dtype', 'bfloat16',
        '--quantization', 'fp8',
        '--mem-fraction-static', '0.85',
      ],
      env: fabricEnv(),
      servesHttp: false,
      waitFor: { host: '10.0.0.10', port: 20001, timeoutMs: 120_000 },
    },
  ]);
});

test('SGLang gets no VLLM_HOST_IP and no RAY_ADDRESS', () => {
  for (const rank of [0, 1]) {
    const env = buildLaunch(sg(multi(rank)), OPTS).commands[0]!.env;
    assert.not.ok('VLLM_HOST_IP' in env);
    assert.not.ok('RAY_ADDRESS' in env);
  }
});

test('an IPv6 leader is bracketed in --dist-init-addr and bare in waitFor', () => {
  const v6 = { leader: { ip: 'fd00::10', port: 20001 } };
  const [worker] = buildLaunch(sg(multi(1, { ...v6, nodeIp: 'fd00::11' })), OPTS).commands;
  assert.is(worker!.argv[worker!.argv.indexOf('--dist-init-addr') + 1], '[fd00::10]:20001');
  assert.equal(worker!.waitFor, { host: 'fd00::10', port: 20001, timeoutMs: 120_000 });
});

test('the default interpreter is python3 on PATH', () => {
  assert.is(buildLaunch(sg(single())).commands[0]!.argv[0], 'python3');
});

test.run();
