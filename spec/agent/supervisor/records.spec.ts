// The pure parts under the supervisor: reading /proc, the output tail, state files, the
// state machine's table and the adoption rules, each against the cases that matter.
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from '../../support/uvu.js';
import * as assert from 'uvu/assert';
import { OutputLog, canTransition, isTerminal, judgeLeftover, parseLeftover, parseProcStat, type ProcessFingerprint } from '../../../src/agent/supervisor/index.js';
import { buildLaunch } from '../../../src/agent/engines/index.js';
import { sumGauges } from '../../../src/agent/supervisor/drain.js';
import { engineSpec, tempDir } from './helpers.js';

test('/proc/<pid>/stat is read from the last parenthesis: a command name may contain ") ("', () => {
  const line = '4242 (evil) (name) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 5 0 987654321 1000 10';
  assert.equal(parseProcStat(line), { state: 'S', pgid: 4242, startTime: '987654321' });
  assert.is(parseProcStat('garbage'), null);
});

test('the output tail keeps the last lines, what a terminal shows of a progress bar, and no line cut by the window', () => {
  const dir = tempDir();
  const path = join(dir, 'out.log');
  writeFileSync(path, 'a\nb\nLoading 10%\rLoading 50%\rLoading 100%\nc\n');
  assert.equal(new OutputLog(path, 3).tail(), ['b', 'Loading 100%', 'c']);
  writeFileSync(path, 'x'.repeat(70_000) + '\nlast\n');
  assert.equal(new OutputLog(path, 10).tail(), ['last'], 'the line the 64 KiB window cut is dropped, not shown half');
  assert.equal(new OutputLog(join(dir, 'none.log'), 5).tail(), []);
  rmSync(dir, { recursive: true });
});

test('the state machine allows the lifecycle and adoption, and nothing out of a terminal state', () => {
  assert.ok(canTransition('pending', 'starting'));
  assert.ok(canTransition('pending', 'loading'), 'adoption');
  assert.ok(canTransition('ready', 'draining'));
  assert.not.ok(canTransition('ready', 'starting'));
  assert.not.ok(canTransition('failed', 'ready'));
  assert.ok(isTerminal('stopped') && isTerminal('failed') && !isTerminal('draining'));
});

const spec = engineSpec(20000);
const launch = buildLaunch(spec);
const fp: ProcessFingerprint = { pid: 4242, pgid: 4242, startTime: '1000', cmdline: ['/usr/bin/python3', '/opt/vllm/bin/vllm', 'serve'] };
const record = (over: Record<string, unknown> = {}): string => JSON.stringify({ version: 1, id: 's', bootId: 'boot-a', spec, launch, processes: [fp], ...over });

test('a state file is trusted only as far as it is well formed; pid 0 and 1 are never taken from it', () => {
  const ok = parseLeftover('s', record());
  assert.equal(ok.problems, []);
  assert.equal(ok.processes, [fp]);
  const bad = parseLeftover('s', record({ processes: [{ ...fp, pid: 1, pgid: 1 }, { ...fp, pgid: 0 }] }));
  assert.equal(bad.processes, []);
  assert.equal(bad.problems, ['process 0 is malformed', 'process 1 is malformed']);
  assert.equal(parseLeftover('s', '{"version":1,').problems, ['the state file is not JSON']);
  assert.match(parseLeftover('t', record()).problems.join(), 'names shard "s"');
});

test('adoption: whole and matching is adopted; a reused pid is never killed; an unreadable spec kills what still matches', () => {
  const read = (now: ProcessFingerprint | null) => () => now;
  assert.is(judgeLeftover(parseLeftover('s', record()), 'boot-a', read(fp)).kind, 'adopt');

  const reused = judgeLeftover(parseLeftover('s', record()), 'boot-a', read({ ...fp, startTime: '2000' }));
  assert.equal(reused.kind === 'discard' && reused.kill, []);
  assert.match(reused.kind === 'discard' ? reused.reason : '', 'pid 4242 was reused (started at tick 2000, not 1000)');

  const retitled = judgeLeftover(parseLeftover('s', record()), 'boot-a', read({ ...fp, cmdline: ['bash'] }));
  assert.equal(retitled.kind === 'discard' && retitled.kill, [], 'another command line is another process');

  const unreadable = judgeLeftover(parseLeftover('s', record({ spec: { replica: 'x' } })), 'boot-a', read(fp));
  assert.equal(unreadable.kind === 'discard' && unreadable.kill, [fp]);

  const partial = judgeLeftover(parseLeftover('s', record({ launch: { ...launch, commands: [launch.commands[0], launch.commands[0]] } })), 'boot-a', read(fp));
  assert.match(partial.kind === 'discard' ? partial.reason : '', '1 of its 2 processes are recorded');
  assert.equal(partial.kind === 'discard' && partial.kill, [fp]);

  const otherBoot = judgeLeftover(parseLeftover('s', record()), 'boot-b', read(fp));
  assert.equal(otherBoot.kind === 'discard' && otherBoot.kill, [], 'start times from another boot identify nothing');
});

test('requests in flight are the running and waiting gauges summed over their labels; none listed means unknown', () => {
  const text = [
    '# HELP vllm:num_requests_running Number of requests in model execution batches.',
    '# TYPE vllm:num_requests_running gauge',
    'vllm:num_requests_running{engine="0",model_name="llama"} 2',
    'vllm:num_requests_running{engine="1",model_name="llama"} 1',
    'vllm:num_requests_waiting{engine="0",model_name="llama"} 4',
    'vllm:num_requests_running_total 99',
  ].join('\n');
  assert.is(sumGauges(text, ['vllm:num_requests_running', 'vllm:num_requests_waiting']), 7);
  assert.is(sumGauges('sglang:num_running_reqs 0\nsglang:num_queue_reqs 0\n', ['sglang:num_running_reqs', 'sglang:num_queue_reqs']), 0);
  assert.is(sumGauges('other 1\n', ['vllm:num_requests_running']), null);
});

test.run();
