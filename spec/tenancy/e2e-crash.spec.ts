// Tenancy's usage survives the server stopping under load, end to end: every answer a
// client received whole has its usage row in the store exactly once, whether the server
// was stopped (SIGTERM: drained, journal flushed) or killed (SIGKILL: the journal
// replayed by the next start on the same store). Admission is off: what is under test
// is the journal and the store, and a queue held shut would stall the load.

import * as assert from 'uvu/assert';
import type { StartedServer } from '../support/process.js';
import { until } from '../support/until.js';
import { suite } from '../support/uvu.js';
import type { SimProcess } from '../sim/helpers.js';
import { createKey, createTree, startSims, storeDir, tenancyServer } from './e2e-fleet.js';
import { storedIds } from './helpers.js';
import { traffic, type Kind, type Sent } from './e2e-traffic.js';

const test = suite('tenancy end to end: usage survives SIGTERM and SIGKILL under load (real processes)');

let sims: Map<string, SimProcess>;

test.before(async () => {
  sims = await startSims(['m'], 100);
});

test.after(async () => {
  for (const s of sims?.values() ?? []) await s.stop();
});

const kindOf = (i: number): Kind => (['json', 'stream', 'abort'] as const)[i % 3]!;

/**
 * Load on a fresh server's key until `completeBefore` answers came whole, then `signal`
 * to the server mid-load; resolves once it has exited and every client has ended.
 */
async function loadThenSignal(signal: 'SIGTERM' | 'SIGKILL', prefix: string): Promise<{ store: string; sent: Sent[]; exitCode: number | null; inFlightAtSignal: number; remove: () => void }> {
  const dir = storeDir();
  const server: StartedServer = await tenancyServer(dir.store, sims);
  try {
    await createTree(server.admin);
    const k = await createKey(server.admin, 'load');
    let completed = 0;
    let started = 0;
    let ended = 0;
    let signalled = false;
    const exited = new Promise<number | null>((resolve) => server.child.once('exit', (code) => resolve(code)));
    const running = traffic({
      url: server.url,
      key: () => k.key,
      total: 1_000_000,
      concurrency: 16,
      maxTokens: (kind) => (kind === 'json' ? 8 : 24),
      kind: (i) => {
        started++;
        return kindOf(i);
      },
      prefix,
      stopped: () => signalled,
      onEnd: (s) => {
        ended++;
        if (s.complete) completed++;
      },
    });
    await until(() => completed >= 300, '300 answers received whole', 60_000).catch((err: Error) => {
      signalled = true;
      throw new Error(`${err.message}: ${completed} whole of ${ended} ended, ${started} sent`);
    });
    const inFlightAtSignal = started - ended;
    signalled = true;
    server.child.kill(signal);
    const exitCode = await exited;
    const sent = await running;
    return { store: dir.store, sent, exitCode, inFlightAtSignal, remove: dir.remove };
  } catch (err) {
    dir.remove();
    throw err;
  } finally {
    await server.stop();
  }
}

/** Every id of `sent` that completed is stored exactly once; no id is stored twice. */
function assertStoredOnce(store: string, sent: readonly Sent[]): void {
  const counts = new Map<string, number>();
  for (const id of storedIds(store)) counts.set(id, (counts.get(id) ?? 0) + 1);
  const twice = [...counts].filter(([, n]) => n > 1);
  assert.equal(twice.slice(0, 5), [], 'no request stored twice');
  const complete = sent.filter((s) => s.complete);
  const missing = complete.filter((s) => counts.get(s.id) !== 1).map((s) => s.id);
  assert.equal(missing.slice(0, 5), [], `${missing.length} of ${complete.length} answers received whole have no usage row`);
  assert.ok(complete.length >= 300);
}

test('SIGTERM mid-load: the server drains, exits 0, and every answer received whole has its usage row once', async () => {
  const run = await loadThenSignal('SIGTERM', 'term');
  try {
    assert.is(run.exitCode, 0);
    assert.ok(run.inFlightAtSignal > 0, 'requests were in flight when the signal came');
    assertStoredOnce(run.store, run.sent);
  } finally {
    run.remove();
  }
});

test('SIGKILL mid-load: the next start on the same store replays the journal; every answer received whole has its usage row once', async () => {
  const run = await loadThenSignal('SIGKILL', 'kill');
  try {
    assert.ok(run.sent.some((s) => !s.complete && s.kind !== 'abort'), 'the kill cut requests in flight');
    // Stopped by SIGTERM and awaited: stop()'s SIGKILL after 5 s would leave the store locked on a slow machine.
    const again = await tenancyServer(run.store, sims);
    const exited = new Promise<string>((resolve) => again.child.once('exit', (code, signal) => resolve(`code ${code}, signal ${signal}`)));
    again.child.kill('SIGTERM');
    const how = await exited;
    assert.is(how, 'code 0, signal null', `the restarted server exited with ${how}: ${again.stderr().slice(-2000)}`);
    await again.stop();
    assertStoredOnce(run.store, run.sent);
  } finally {
    run.remove();
  }
});

test.run();
