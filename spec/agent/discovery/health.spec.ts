import { test } from '../../support/uvu.js';
import * as assert from 'uvu/assert';
import { gpuProblems } from '../../../src/agent/discovery/health.js';
import { parseComputeApps, parseGpuQuery, type SmiGpu } from '../../../src/agent/discovery/nvidia-smi.js';
import { readFixture } from './fixtures.js';

const gpus = parseGpuQuery(readFixture('foreign-process', 'query-gpu.csv'));
const apps = parseComputeApps(readFixture('foreign-process', 'query-compute-apps.csv'));
const gpu3 = gpus[3]!;
const none = new Set<number>();

test('a healthy card has no problem', () => {
  assert.equal(gpuProblems({ gpu: gpus[0]!, apps, ours: none }), []);
});

test('every process llmgw did not start is a problem naming its pid, name and memory', () => {
  assert.equal(gpuProblems({ gpu: gpu3, apps, ours: none }), [
    'GPU 3 is used by pid 11327 (/root/tools/memhog, 2566 MiB), which llmgw did not start: stop it or move it to another card',
    'GPU 3 is used by pid 11328 (/root/tools/memhog, 1542 MiB), which llmgw did not start: stop it or move it to another card',
    'GPU 3 is used by pid 11345 (./gpu_burn, 15690 MiB), which llmgw did not start: stop it or move it to another card',
  ]);
});

test('our own engines are not foreign', () => {
  assert.equal(gpuProblems({ gpu: gpu3, apps, ours: new Set([11345]) }).length, 2);
  assert.equal(gpuProblems({ gpu: gpu3, apps, ours: new Set([11327, 11328, 11345]) }), []);
});

test('a card whose only process is our engine, its memory [N/A], has no problem', () => {
  const na = parseComputeApps(`${gpu3.uuid}, 22001, python3, [N/A]\n`);
  assert.is(na[0]!.usedMemoryMiB, null);
  assert.equal(gpuProblems({ gpu: gpu3, apps: na, ours: new Set([22001]) }), [], 'memory unknown is not memory unaccounted for');
  assert.equal(gpuProblems({ gpu: gpu3, apps: na, ours: none }), [
    'GPU 3 is used by pid 22001 (python3), which llmgw did not start: stop it or move it to another card',
  ]);
});

test('a card without a UUID is charged with no process: nvidia-smi names cards by UUID, and another card\'s are not its own', () => {
  assert.equal(gpuProblems({ gpu: { ...gpu3, uuid: null, memoryUsedMiB: 100 }, apps, ours: none }), []);
});

test('memory in use that no listed process holds is a problem (a process in another PID namespace)', () => {
  const listed = apps.filter((a) => a.pid !== 11345); // gpu_burn invisible, as from a container
  const problems = gpuProblems({ gpu: gpu3, apps: listed, ours: new Set([11327, 11328]) });
  assert.equal(problems, [
    'GPU 3 has 15705 MiB in use that no listed process holds: a process in another container or PID namespace probably does; find it with nvidia-smi on the host and stop it',
  ]);
  // Up to the tolerance it is driver overhead.
  const small: SmiGpu = { ...gpu3, memoryUsedMiB: 512 };
  assert.equal(gpuProblems({ gpu: small, apps: [], ours: none }), []);
  assert.equal(gpuProblems({ gpu: { ...gpu3, memoryUsedMiB: 513 }, apps: [], ours: none }).length, 1);
});

test('uncorrected ECC errors are a problem that says how to act; none or unknown is not', () => {
  const [a100] = parseGpuQuery(readFixture('ecc-fault', 'query-gpu.csv')).slice(5);
  assert.equal(gpuProblems({ gpu: a100!, apps: [], ours: none }), [
    'GPU 5 has 2 uncorrected ECC errors since the driver loaded: drain it, reset it (nvidia-smi -r -i 5), and replace the card if they come back',
  ]);
  assert.match(gpuProblems({ gpu: { ...a100!, eccUncorrected: 1 }, apps: [], ours: none })[0]!, /has 1 uncorrected ECC error since/);
  assert.equal(gpuProblems({ gpu: { ...a100!, eccUncorrected: null }, apps: [], ours: none }), []);
});

test('an unknown temperature is not a problem', () => {
  assert.equal(gpuProblems({ gpu: { ...gpus[0]!, temperatureC: null }, apps: [], ours: none }), []);
});

test('when processes cannot be listed the card cannot be shown free', () => {
  const problems = gpuProblems({ gpu: gpus[0]!, apps: { error: 'nvidia-smi exited with status 3' }, ours: none });
  assert.equal(problems, [
    'GPU 0: the processes using it could not be listed (nvidia-smi exited with status 3), so it cannot be shown to be free: fix nvidia-smi --query-compute-apps, then discover again',
  ]);
});

test('a card nvidia-smi reports as needing a reset is a problem', () => {
  const problems = gpuProblems({ gpu: { ...gpus[2]!, deviceError: '[GPU requires reset]' }, apps: [], ours: none });
  assert.equal(problems, ['GPU 2: nvidia-smi reports [GPU requires reset]: reset it (nvidia-smi -r -i 2) or reboot the node, and check dmesg for Xid errors']);
});

test.run();
