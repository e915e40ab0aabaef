import { suite } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { LlmgwError } from '../../src/errors.js';
import { until } from '../support/until.js';
import { ActorSystem, address, type ActorRef } from '../../src/runtime/index.js';
import { counter, counterAt, dropGate, gateAt, holder, holderAt, holding, openGate, rejectGate, released, type GateMsg } from './fixtures/actors.js';

const fatal: LlmgwError[] = [];
let system: ActorSystem;

const test = suite('actor system');

test.before(async () => {
  system = await ActorSystem.start({ threads: [{ name: 'w1' }, { name: 'w2' }], askTimeoutMs: 2_000, onFatal: (e) => fatal.push(e) });
});
test.after(async () => {
  await system.shutdown();
});

test('a typed mailbox accepts only its protocol', async () => {
  const c = await system.spawn(counter, { address: counterAt('typed'), args: { start: 1 } });
  c.tell({ type: 'add', n: 2 });
  assert.is(await c.ask({ type: 'get' }), 3);
  // An address declared with the wrong protocol is refused at the door, not by a crash
  // of the actor, and not by a throw in the sender either.
  assert.is(system.ref(address<{ type: 'mul'; n: number }>('typed')).tell({ type: 'mul', n: 2 }), false);
  assert.is((await statsOf('typed')).rejected, 1);
  assert.is(await c.ask({ type: 'get' }), 3);
  // Compile errors, checked by the build that `npm test` runs: if any of them ever
  // compiled, its @ts-expect-error would itself fail the build. Never called.
  const mistakes = async (): Promise<void> => {
    // @ts-expect-error 'mul' is not in CounterMsg
    c.tell({ type: 'mul', n: 2 });
    // @ts-expect-error 'add' carries a number
    c.tell({ type: 'add', n: 'two' });
    // @ts-expect-error 'get' expects a reply: it must be asked, not told
    c.tell({ type: 'get' });
    // @ts-expect-error the reply of 'where' is a string
    const wrong: number = await c.ask({ type: 'where' });
    void wrong;
  };
  void mistakes;
  const reply: number = await c.ask({ type: 'get' });
  assert.is(reply, 3);
  await system.stop('typed');
});

test('an ask crosses threads, and actors on two workers ask each other', async () => {
  const a = await system.spawn(counter, { address: counterAt('on-w1'), thread: 'w1', args: { start: 10 } });
  const b = await system.spawn(counter, { address: counterAt('on-w2'), thread: 'w2', args: { start: 32 } });
  assert.is(await a.ask({ type: 'where' }), 'w1');
  assert.is(await b.ask({ type: 'where' }), 'w2');
  assert.is(system.where('on-w1'), 'w1');
  a.tell({ type: 'add', n: 5 });
  assert.is(await a.ask({ type: 'sum-with', other: counterAt('on-w2') }), 47);
  await system.stop('on-w1');
  await system.stop('on-w2');
});

test('an ask to a missing actor fails with LLMGW_ACTOR_NOT_FOUND, on any thread', async () => {
  const err = await system.ref(counterAt('nobody')).ask({ type: 'get' }).catch((e: unknown) => e);
  assert.instance(err, LlmgwError);
  assert.is((err as LlmgwError).code, 'LLMGW_ACTOR_NOT_FOUND');
  const w = await system.spawn(counter, { address: counterAt('asker'), thread: 'w1', args: { start: 0 } });
  const err2 = await w.ask({ type: 'sum-with', other: counterAt('nobody') }).catch((e: unknown) => e);
  assert.is((err2 as LlmgwError).code, 'LLMGW_ACTOR_NOT_FOUND');
  await system.stop('asker');
});

test('an ask that gets no reply in time fails with LLMGW_ASK_TIMEOUT', async () => {
  const g = await system.spawn(rejectGate, { address: gateAt('slow'), args: undefined });
  g.tell({ type: 'hold', id: 1 });
  const err = await g.ask({ type: 'seen' }, { timeoutMs: 30 }).catch((e: unknown) => e);
  assert.is((err as LlmgwError).code, 'LLMGW_ASK_TIMEOUT');
  openGate('slow');
  await system.stop('slow');
});

test('a crash restarts the actor with fresh state, fails the ask that caused it, and is counted', async () => {
  for (const thread of ['main', 'w1']) {
    const name = `crashy-${thread}`;
    const c = await system.spawn(counter, { address: counterAt(name), thread, args: { start: 100 } });
    c.tell({ type: 'add', n: 1 });
    const err = await c.ask({ type: 'boom', message: 'handler bug' }).catch((e: unknown) => e);
    assert.instance(err, LlmgwError);
    assert.is((err as LlmgwError).message, 'handler bug');
    assert.is(await c.ask({ type: 'get' }), 100, 'state is rebuilt by init, not kept');
    const stats = (await system.stats()).find((s) => s.name === name)!;
    assert.is(stats.thread, thread);
    assert.is(stats.failures, 1);
    assert.is(stats.restarts, 1);
    assert.is(stats.status, 'running');
    await system.stop(name);
  }
});

test('a reject mailbox refuses the message once full, and the sender sees it', async () => {
  const g: ActorRef<GateMsg> = await system.spawn(rejectGate, { address: gateAt('full'), args: undefined });
  g.tell({ type: 'hold', id: 0 }); // taken and held by the handler
  await until(async () => (await statsOf('full')).mailbox === 0);
  for (let i = 1; i <= 3; i++) g.tell({ type: 'hold', id: i });
  assert.is(g.tell({ type: 'hold', id: 4 }), false, 'the sender learns of the refusal; tell never throws');
  const askErr = await g.ask({ type: 'seen' }).catch((e: unknown) => e);
  assert.is((askErr as LlmgwError).code, 'LLMGW_MAILBOX_FULL');
  openGate('full');
  await until(async () => (await statsOf('full')).processed === 4);
  assert.equal(await g.ask({ type: 'seen' }), [0, 1, 2, 3]);
  const s = await statsOf('full');
  assert.is(s.rejected, 2);
  assert.is(s.highWater, 3);
  await system.stop('full');
});

test('a tell that cannot be delivered is a dead letter counted by addressee and reason, never a throw', async () => {
  const g = await system.spawn(rejectGate, { address: gateAt('brim'), args: undefined });
  g.tell({ type: 'hold', id: 0 });
  await until(async () => (await statsOf('brim')).mailbox === 0);
  for (let i = 1; i <= 3; i++) assert.ok(g.tell({ type: 'hold', id: i }));
  assert.is(g.tell({ type: 'hold', id: 4 }), false);
  assert.is(g.tell({ type: 'hold', id: 5 }), false);
  assert.is(((await g.ask({ type: 'seen' }).catch((e: unknown) => e)) as LlmgwError).code, 'LLMGW_MAILBOX_FULL', 'a refused ask fails at once');
  assert.is(system.ref(counterAt('nobody-told')).tell({ type: 'add', n: 1 }), false);
  // From a worker: the ask's handler tells an actor that does not exist.
  const w = await system.spawn(counter, { address: counterAt('teller'), thread: 'w1', args: { start: 0 } });
  await w.ask({ type: 'tell-to', to: counterAt('nobody-either') });
  openGate('brim');
  await system.stop('brim');
  assert.is(g.tell({ type: 'hold', id: 6 }), false, 'a stopped actor is a dead letter too');
  const text = await (await system.metrics()).metrics();
  assert.match(text, /llmgw_actor_dead_letters_total\{thread="main",actor="brim",reason="LLMGW_MAILBOX_FULL"\} 3/);
  assert.match(text, /llmgw_actor_dead_letters_total\{thread="main",actor="nobody-told",reason="LLMGW_ACTOR_NOT_FOUND"\} 1/);
  assert.match(text, /llmgw_actor_dead_letters_total\{thread="main",actor="brim",reason="LLMGW_ACTOR_NOT_FOUND"\} 1/);
  assert.match(text, /llmgw_actor_dead_letters_total\{thread="main",actor="nobody-either",reason="LLMGW_ACTOR_NOT_FOUND"\} 1/);
  await system.stop('teller');
});

test('onStop releases what an incarnation holds, on a crash before the restart and on stop', async () => {
  released.length = 0;
  const h = await system.spawn(holder, { address: holderAt('holder'), args: undefined });
  const first = await h.ask({ type: 'port' });
  await h.ask({ type: 'boom' }).catch(() => {});
  const second = await h.ask({ type: 'port' });
  assert.is.not(second, first, 'a fresh incarnation with its own socket');
  assert.equal(released, ['crashed']);
  assert.is(holding.size, 1, 'the crashed incarnation closed its socket before the next one opened');
  await system.stop('holder');
  assert.equal(released, ['crashed', 'stopped']);
  assert.is(holding.size, 0);
});

test('a drop-oldest mailbox discards the oldest message once full', async () => {
  const g = await system.spawn(dropGate, { address: gateAt('lossy'), args: undefined });
  g.tell({ type: 'hold', id: 0 });
  await until(async () => (await statsOf('lossy')).mailbox === 0);
  for (let i = 1; i <= 5; i++) g.tell({ type: 'hold', id: i });
  openGate('lossy');
  await until(async () => (await statsOf('lossy')).processed === 4);
  assert.equal(await g.ask({ type: 'seen' }), [0, 3, 4, 5]);
  assert.is((await statsOf('lossy')).dropped, 2);
  await system.stop('lossy');
});

test('a drop-oldest mailbox sheds tells before an ask that waits in it', async () => {
  const g = await system.spawn(dropGate, { address: gateAt('lossy-ask'), args: undefined });
  g.tell({ type: 'hold', id: 0 });
  await until(async () => (await statsOf('lossy-ask')).mailbox === 0);
  const seen = g.ask({ type: 'seen' });
  await until(async () => (await statsOf('lossy-ask')).mailbox === 1);
  for (let i = 1; i <= 5; i++) g.tell({ type: 'hold', id: i });
  openGate('lossy-ask');
  const answered = await seen.then(
    () => true,
    () => false,
  );
  assert.ok(answered, 'the ask outlived five ticks through a mailbox of three');
  await until(async () => (await statsOf('lossy-ask')).processed === 4);
  assert.equal(await g.ask({ type: 'seen' }), [0, 4, 5]);
  assert.is((await statsOf('lossy-ask')).dropped, 3);
  await system.stop('lossy-ask');
});

test('a stopped actor refuses messages', async () => {
  const c = await system.spawn(counter, { address: counterAt('gone'), thread: 'w2', args: { start: 0 } });
  await system.stop('gone');
  const err = await c.ask({ type: 'get' }).catch((e: unknown) => e);
  assert.is((err as LlmgwError).code, 'LLMGW_ACTOR_NOT_FOUND');
  assert.is(system.where('gone'), undefined);
});

test('a spawn with a taken name or an unknown thread fails clearly', async () => {
  await system.spawn(counter, { address: counterAt('dup'), args: { start: 0 } });
  const err = await system.spawn(counter, { address: counterAt('dup'), thread: 'w1', args: { start: 0 } }).catch((e: unknown) => e);
  assert.is((err as LlmgwError).code, 'LLMGW_ACTOR_EXISTS');
  const err2 = await system.spawn(counter, { address: counterAt('x'), thread: 'w9', args: { start: 0 } }).catch((e: unknown) => e);
  assert.match((err2 as LlmgwError).message, /no such thread/);
  await system.stop('dup');
});

test('a large payload moves to another thread without a copy', async () => {
  const c = await system.spawn(counter, { address: counterAt('mover'), thread: 'w1', args: { start: 0 } });
  const bytes = new Uint8Array(1 << 20).fill(1);
  assert.is(await c.ask({ type: 'sum-bytes', bytes }, { transfer: [bytes.buffer] }), 1 << 20);
  assert.is(bytes.byteLength, 0, 'the sender no longer owns the buffer: it was moved, not copied');
  const copied = new Uint8Array(16).fill(2);
  assert.is(await c.ask({ type: 'sum-bytes', bytes: copied }), 32);
  assert.is(copied.byteLength, 16, 'without a transfer list the message is copied');
  await system.stop('mover');
});

test('actors on any thread use the CPU pool', async () => {
  const c = await system.spawn(counter, { address: counterAt('hasher'), thread: 'w2', args: { start: 0 } });
  const a = await c.ask({ type: 'hash', text: 'abcdabcdabcd' });
  const b = await c.ask({ type: 'hash', text: 'abcdabcdXbcd' });
  assert.is(a.length, 3);
  assert.is(a[0], b[0], 'same first block, same hash');
  assert.is(a[1], b[1]);
  assert.is.not(a[2], b[2], 'a change in block 3 changes its hash');
  await system.stop('hasher');
});

test('runtime metrics from every thread are merged into one registry', async () => {
  const c = await system.spawn(counter, { address: counterAt('metered'), thread: 'w1', args: { start: 0 } });
  for (let i = 0; i < 5; i++) c.tell({ type: 'add', n: 1 });
  await c.ask({ type: 'get' });
  const text = await (await system.metrics()).metrics();
  assert.match(text, /llmgw_actor_messages_processed_total\{actor="metered",thread="w1"\} 6/);
  assert.match(text, /llmgw_actor_handling_seconds_count\{actor="metered",thread="w1"\} 6/);
  assert.match(text, /llmgw_actor_mailbox_capacity\{actor="metered",thread="w1"\} 1000/);
  await system.stop('metered');
  assert.is(fatal.length, 0);
});

async function statsOf(name: string) {
  const s = (await system.stats()).find((x) => x.name === name);
  if (!s) throw new Error(`no stats for ${name}`);
  return s;
}

test.run();
