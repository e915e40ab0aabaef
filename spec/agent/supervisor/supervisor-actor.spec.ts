import { rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { test } from '../../support/uvu.js';
import * as assert from 'uvu/assert';
import { supervisorActor } from '../../../src/actors/agent/supervisor-actor.js';
import { findOrphans, groupAlive } from '../../../src/agent/supervisor/index.js';
import { SUPERVISOR, type ShardEvent, type ShardEventSinkMsg } from '../../../src/messages/agent.js';
import { ActorSystem, address, defineActor, type Ask } from '../../../src/runtime/index.js';
import { until } from '../../support/until.js';
import { TIMING, engineSpec, executable, fixture, freePort, reaped, tempDir, trackGroup } from './helpers.js';

type CollectorMsg = ShardEventSinkMsg | ({ type: 'events' } & Ask<ShardEvent[]>);

/** A subscriber on the main thread, as the control-plane stream will be. */
const collector = defineActor<CollectorMsg>()({
  kind: 'spec.shard-event-collector',
  module: import.meta.url,
  mailbox: { capacity: 100, overflow: 'reject' },
  init: () => ({ events: [] as ShardEvent[] }),
  handlers: {
    'shard-event': (s, m) => void s.events.push(m.event),
    events: (s) => s.events,
  },
});

const dir = tempDir();
const stateDir = join(dir, 'state');
const groups: number[] = [];

test('the supervisor actor runs on the agent thread, answers at once and reports every transition to its subscriber', async () => {
  const system = await ActorSystem.start({ threads: [{ name: 'agent' }], askTimeoutMs: 2_000 });
  try {
    const events = await system.spawn(collector, { address: address<CollectorMsg>('events'), args: undefined });
    const sup = await system.spawn(supervisorActor, {
      address: SUPERVISOR,
      thread: 'agent',
      args: { stateDir, launch: { vllm: executable(dir, 'vllm', fixture('fake-vllm.mjs')) }, timing: TIMING, outputLines: 20, subscribers: [events.address] },
    });
    assert.is(system.where('supervisor'), 'agent');

    const reply = await sup.ask({ type: 'start', id: 'eng', spec: engineSpec(await freePort()) });
    assert.ok(reply.ok && reply.value.created);
    assert.is(reply.ok && reply.value.status.state, 'starting', 'start answers before the engine is up');
    const states = async (): Promise<string[]> => (await events.ask({ type: 'events' })).map((e) => e.state);
    await until(async () => (await states()).includes('ready'), 'ready event', 10_000);

    const [listed] = await sup.ask({ type: 'list' });
    assert.is(listed!.state, 'ready');
    const pgid = listed!.processes[0]!.pgid;
    groups.push(pgid);
    trackGroup(pgid);

    // The output's tail, from the shard's log file: the engine's own lines, the last one last.
    const output = await sup.ask({ type: 'output', id: 'eng', lines: 0 });
    assert.ok(output.ok && output.value.some((l) => l.startsWith('INFO loading /models/llama-3.1-8b')), JSON.stringify(output));
    const last = await sup.ask({ type: 'output', id: 'eng', lines: 1 });
    assert.equal(last.ok && last.value.length === 1 && last.value[0], output.ok && output.value.at(-1));

    // A refusal is an answer with a typed error, and the actor (with its engine) carries on.
    const invalid = await sup.ask({ type: 'start', id: 'bad', spec: { ...engineSpec(1), gpus: [] } });
    assert.is(!invalid.ok && invalid.error.code, 'LLMGW_SHARD_INVALID');
    const unknown = await sup.ask({ type: 'stop', id: 'nope' });
    assert.is(!unknown.ok && unknown.error.code, 'LLMGW_NOT_FOUND');
    const noOutput = await sup.ask({ type: 'output', id: 'nope', lines: 5 });
    assert.is(!noOutput.ok && noOutput.error.message, "no shard 'nope' on this node");

    const stopping = await sup.ask({ type: 'stop', id: 'eng' });
    assert.is(stopping.ok && stopping.value.state, 'draining');
    await until(async () => (await states()).includes('stopped'), 'stopped event', 10_000);
    assert.equal(await states(), ['starting', 'loading', 'ready', 'draining', 'stopped']);
    assert.not.ok(groupAlive(pgid));
  } finally {
    await system.shutdown();
  }
});

test('no process outlives the suite: kill(-pgid, 0) finds no group any spec started', async () => {
  for (const o of findOrphans(resolve(stateDir), new Set())) groups.push(o.pgid);
  await reaped(groups);
  rmSync(dir, { recursive: true, force: true });
});

test.run();
