import { suite } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { LlmgwError } from '../../src/errors.js';
import { until } from '../support/until.js';
import { ActorSystem } from '../../src/runtime/index.js';
import { RestartTracker } from '../../src/runtime/supervision.js';
import { counter, counterAt, parent, parentAt, type CounterMsg } from './fixtures/actors.js';

const test = suite('supervision');

test('restart backoff doubles up to its cap, and too many failures in the window escalate', () => {
  const t = new RestartTracker({ maxRestarts: 3, withinMs: 1_000, backoffInitialMs: 10, backoffMaxMs: 25 });
  assert.is(t.onFailure(0), 10);
  assert.is(t.onFailure(1), 20);
  assert.is(t.onFailure(2), 25);
  assert.is(t.onFailure(3), null, 'fourth failure inside the window escalates');
  assert.is(t.onFailure(2_000), 10, 'failures older than the window are forgotten');
  t.reset();
  assert.is(t.onFailure(2_001), 10);
});

async function crashLoop(ref: { ask(m: { type: 'boom'; message: string }): Promise<void> }, times: number): Promise<void> {
  for (let i = 0; i < times; i++) {
    // Each ask fails with the handler's error; the actor restarts after a short backoff.
    await ref.ask({ type: 'boom', message: `crash ${i}` }).catch(() => {});
  }
}

test('a child that keeps crashing escalates to its parent, which may restart it', async () => {
  const fatal: LlmgwError[] = [];
  const system = await ActorSystem.start({ threads: [{ name: 'w1' }], onFatal: (e) => fatal.push(e) });
  try {
    const p = await system.spawn(parent, { address: parentAt('parent'), args: { decision: 'restart' } });
    await p.ask({ type: 'spawn-child', name: 'child', thread: 'w1' });
    const child = system.ref(counterAt('child'));
    // maxRestarts is 3: the 4th crash inside the window is escalated.
    await crashLoop(child, 4);
    await until(async () => (await p.ask({ type: 'failures' })).length === 1);
    assert.equal(await p.ask({ type: 'failures' }), ['child: crash 3']);
    assert.is(await child.ask({ type: 'get' }), 0, 'the parent restarted it');
    const s = (await system.stats()).find((x) => x.name === 'child')!;
    assert.is(s.parent, 'parent');
    assert.is(s.failures, 4);
    assert.is(s.restarts, 4);
    assert.is(fatal.length, 0);
  } finally {
    await system.shutdown();
  }
});

test('a parent that stops a failed child removes it', async () => {
  const system = await ActorSystem.start({ onFatal: () => {} });
  try {
    const p = await system.spawn(parent, { address: parentAt('parent'), args: { decision: 'stop' } });
    await p.ask({ type: 'spawn-child', name: 'child', thread: 'main' });
    await crashLoop(system.ref(counterAt('child')), 4);
    await until(async () => system.where('child') === undefined);
    assert.equal(await p.ask({ type: 'failures' }), ['child: crash 3']);
  } finally {
    await system.shutdown();
  }
});

test('escalation past the root is fatal, never silent', async () => {
  const fatal: LlmgwError[] = [];
  const system = await ActorSystem.start({ threads: [{ name: 'w1' }], onFatal: (e) => fatal.push(e) });
  try {
    // The parent escalates; the parent itself then fails, restarts, and its own
    // escalation reaches the root once it too has failed too often.
    const p = await system.spawn(parent, { address: parentAt('parent'), args: { decision: 'escalate' } });
    await p.ask({ type: 'spawn-child', name: 'child', thread: 'w1' });
    await crashLoop(system.ref(counterAt('child')), 4);
    await until(async () => system.where('child') === undefined);
    const ps = (await system.stats()).find((x) => x.name === 'parent')!;
    assert.is(ps.failures, 1, 'the escalation counted as a failure of the parent');
    const root = await system.spawn(counter, { address: counterAt('root-actor'), thread: 'w1', args: { start: 0 } });
    await crashLoop(root, 4);
    await until(async () => fatal.length === 1);
    assert.is(fatal[0]!.code, 'LLMGW_ESCALATED');
    assert.match(fatal[0]!.message, /root-actor/);
  } finally {
    await system.shutdown();
  }
});

test('a worker thread that dies has its actors restarted on a fresh thread', async () => {
  const fatal: LlmgwError[] = [];
  const system = await ActorSystem.start({ threads: [{ name: 'w1', onDeath: 'respawn' }, { name: 'w2' }], onFatal: (e) => fatal.push(e) });
  try {
    const c = await system.spawn(counter, { address: counterAt('victim'), thread: 'w1', args: { start: 7 } });
    await system.spawn(counter, { address: counterAt('bystander'), thread: 'w2', args: { start: 1 } });
    c.tell({ type: 'add', n: 1 });
    assert.is(await c.ask({ type: 'get' }), 8);
    const respawned = new Promise<{ thread: string; actors: string[] }>((r) => system.events.once('thread-respawned', r));
    c.tell({ type: 'exit-thread' });
    assert.equal(await respawned, { thread: 'w1', actors: ['victim'] });
    assert.is(await c.ask({ type: 'get' }), 7, 'fresh state on the new thread');
    assert.is(await c.ask({ type: 'where' }), 'w1');
    const s = (await system.stats()).find((x) => x.name === 'victim')!;
    assert.is(s.restarts, 1);
    // The other worker reaches the respawned actor through the rebuilt mesh.
    assert.is(await system.ref(counterAt('bystander')).ask({ type: 'sum-with', other: counterAt('victim') }), 8);
    assert.is(fatal.length, 0);
  } finally {
    await system.shutdown();
  }
});

test('an ask waiting on a thread that dies fails with LLMGW_THREAD_DIED at once', async () => {
  const system = await ActorSystem.start({ threads: [{ name: 'w1' }], onFatal: () => {} });
  try {
    const c = await system.spawn(counter, { address: counterAt('victim'), thread: 'w1', args: { start: 0 } });
    c.tell({ type: 'exit-thread' });
    const err = await c.ask({ type: 'get' }, { timeoutMs: 60_000 }).catch((e: unknown) => e);
    assert.instance(err, LlmgwError);
    assert.is((err as LlmgwError).code, 'LLMGW_THREAD_DIED');
  } finally {
    await system.shutdown();
  }
});

test("a thread declared onDeath 'fail' takes the process down loudly", async () => {
  const fatal: LlmgwError[] = [];
  const system = await ActorSystem.start({ threads: [{ name: 'w1', onDeath: 'fail' }], onFatal: (e) => fatal.push(e) });
  try {
    const c = await system.spawn(counter, { address: counterAt('victim'), thread: 'w1', args: { start: 0 } });
    c.tell({ type: 'exit-thread' });
    await until(async () => fatal.length === 1);
    assert.is(fatal[0]!.code, 'LLMGW_THREAD_DIED');
    assert.match(fatal[0]!.message, /'w1' died \(exit code 3\) with actors victim/);
  } finally {
    await system.shutdown();
  }
});

test.run();
