import { test } from '../../support/uvu.js';
import * as assert from 'uvu/assert';
import { checkOverrides, deriveGpuClass, overrideFor } from '../../../src/agent/discovery/gpu-class.js';
import { LlmgwError } from '../../../src/errors.js';

test('the class is the model and the driver-reported size rounded up to a whole GiB', () => {
  const cases: Array<[string, number, string]> = [
    ['NVIDIA H100 80GB HBM3', 81559, 'h100-80g'],
    ['NVIDIA H100-SXM5-80GB', 81559, 'h100-80g'],
    ['NVIDIA H200', 143771, 'h200-141g'], // 140.4 GiB: plain rounding would say 140
    ['NVIDIA A100-SXM4-80GB', 81920, 'a100-80g'], // exactly 80 GiB stays 80
    ['Tesla A100-SXM4-40GB', 40960, 'a100-40g'],
    ['NVIDIA A100 80GB PCIe', 81920, 'a100-80g'],
    ['NVIDIA L40S', 46068, 'l40s-45g'], // 44.99 GiB, sold as "48GB"
    ['NVIDIA GeForce RTX 4090', 24564, '4090-24g'],
    ['NVIDIA GeForce RTX 4080 SUPER', 16376, '4080super-16g'],
    ['NVIDIA GeForce RTX 4070 Ti', 12282, '4070ti-12g'],
    ['NVIDIA H100 NVL', 95830, 'h100-94g'],
    ['NVIDIA RTX A6000', 49140, 'a6000-48g'],
    ['Tesla V100-SXM2-32GB', 32768, 'v100-32g'],
  ];
  for (const [name, mib, want] of cases) assert.is(deriveGpuClass(name, mib), want, `${name} (${mib} MiB)`);
});

test('no class without a size or without a model word', () => {
  assert.is(deriveGpuClass('NVIDIA L40S', null), null);
  assert.is(deriveGpuClass('NVIDIA L40S', 0), null, 'a size of 0 is a driver that could not read it');
  assert.is(deriveGpuClass(null, 46068), null);
  assert.is(deriveGpuClass('NVIDIA Graphics Device', 46068), null);
});

test('an override by UUID beats one by index, which beats one by name (case-insensitive)', () => {
  const gpu = { index: 3, uuid: 'GPU-abc', name: 'NVIDIA L40S' };
  assert.is(overrideFor(gpu, { 'nvidia l40s': 'l40s-48g' }), 'l40s-48g');
  assert.is(overrideFor(gpu, { 'NVIDIA L40S': 'l40s-48g', '3': 'l40s-odd' }), 'l40s-odd');
  assert.is(overrideFor(gpu, { 'NVIDIA L40S': 'l40s-48g', '3': 'l40s-odd', 'GPU-abc': 'l40s-mine' }), 'l40s-mine');
  assert.is(overrideFor(gpu, { '4': 'x' }), null);
  assert.is(overrideFor(gpu, undefined), null);
});

test('an override that is not a class name is a config error; one that matches no GPU is a warning', () => {
  const gpus = [{ index: 0, uuid: 'GPU-a', name: 'NVIDIA L40S' }];
  try {
    checkOverrides({ '0': 'L40S 48GB' }, gpus);
    assert.unreachable('accepted');
  } catch (err) {
    assert.instance(err, LlmgwError);
    assert.is((err as LlmgwError).code, 'LLMGW_CONFIG_INVALID');
    assert.match((err as LlmgwError).message, /class override for "0": "L40S 48GB" is not a GPU class/);
  }
  assert.equal(checkOverrides({ '0': 'l40s-48g', 'GPU-a': 'x', 'nvidia l40s': 'y' }, gpus), []);
  assert.equal(checkOverrides({ '9': 'l40s-48g' }, gpus), [
    'the class override for "9" matches no GPU on this node (keys are a GPU index, UUID or name): remove it or fix the key',
  ]);
});

test.run();
