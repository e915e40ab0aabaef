import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { LlmgwError } from '../../src/errors.js';
import { ActorSystem } from '../../src/runtime/index.js';
import { buffer, bufferAt, counter, counterAt, producer, producerAt, recorder, recorderAt, type ProducerMsg } from './fixtures/actors.js';

test('shutdown drains mailboxes in dependency order and flushes before exit', async () => {
  const system = await ActorSystem.start({ threads: [{ name: 'w1' }, { name: 'w2' }] });
  // sink (main) <- buffer (w2) <- producer (w1): the producer must stop first, then the
  // buffer drains and flushes into the sink, which stops last.
  await system.spawn(recorder, { address: recorderAt('sink'), args: undefined });
  await system.spawn(buffer, { address: bufferAt('buffer'), thread: 'w2', args: { sink: recorderAt('sink') }, dependsOn: [recorderAt('sink')] });
  const p = await system.spawn(producer, { address: producerAt('producer'), thread: 'w1', args: { target: bufferAt('buffer'), sink: recorderAt('sink') }, dependsOn: [bufferAt('buffer'), recorderAt('sink')] });
  for (let i = 0; i < 500; i++) p.tell({ type: 'produce', value: String(i) } satisfies ProducerMsg);
  // Capture the sink's log from inside: its last act before stopping is to hand it over.
  let events: string[] = [];
  const sink = system.ref(recorderAt('sink'));
  const originalStop = system.stop.bind(system);
  system.stop = async (name: string) => {
    if (name === 'sink') events = await sink.ask({ type: 'events' });
    return originalStop(name);
  };
  await system.shutdown();
  assert.is(events.length, 2);
  assert.is(events[0], 'stop producer');
  assert.is(events[1], `flush buffer: ${Array.from({ length: 500 }, (_, i) => i).join(',')}`, 'every message produced before shutdown was drained and flushed');
  const err = await system.spawn(counter, { address: counterAt('late'), args: { start: 0 } }).catch((e: unknown) => e);
  assert.is((err as LlmgwError).code, 'LLMGW_SHUTTING_DOWN');
});

test('shutdown is idempotent', async () => {
  const system = await ActorSystem.start({ threads: [{ name: 'w1' }] });
  await system.spawn(counter, { address: counterAt('c'), thread: 'w1', args: { start: 0 } });
  await Promise.all([system.shutdown(), system.shutdown()]);
  assert.is(system.where('c'), undefined);
});

test.run();
