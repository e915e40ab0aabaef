// A worker rank cannot join a leader that is not listening yet. Rather than let it spend
// its own start-up budget retrying, the supervisor holds the command until the
// rendezvous address accepts a TCP connection, and gives up after the command's timeout
// so a leader that never comes up fails the shard instead of hanging it.
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { WaitFor } from '../engines/index.js';
import { LlmgwError } from '../../errors.js';

const RETRY_MS = 100;
/** Longest a single connection attempt may wait for an answer. */
const ATTEMPT_MS = 1_000;

const NONE = 'no attempt finished';

/** Resolves once `target` accepts a connection; rejects with LLMGW_RENDEZVOUS_TIMEOUT, or with the abort reason. */
export async function waitForListener(target: WaitFor, signal: AbortSignal): Promise<void> {
  const deadline = Date.now() + target.timeoutMs;
  let last = NONE;
  for (;;) {
    signal.throwIfAborted();
    const left = deadline - Date.now();
    if (left <= 0) break;
    const budget = Math.min(left, ATTEMPT_MS);
    const failed = await tryConnect(target.host, target.port, budget, signal);
    if (failed === null) return;
    // An attempt the deadline cut to a few ms and that timed out says nothing of the
    // listener: on a busy host its timer fires before a refusal already queued is read
    // (timers run first in Node's event loop). The last real answer stays the reason.
    if (!failed.timedOut || budget === ATTEMPT_MS || last === NONE) last = failed.why;
    await sleep(Math.min(RETRY_MS, Math.max(0, deadline - Date.now())), undefined, { signal });
  }
  throw new LlmgwError(
    'LLMGW_RENDEZVOUS_TIMEOUT',
    `rendezvous ${target.host}:${target.port} did not accept a connection within ${target.timeoutMs} ms (last attempt: ${last}); is the leader rank running?`,
    { host: target.host, port: target.port, timeoutMs: target.timeoutMs },
  );
}

/** One connection attempt: null when it connected, else why not (and whether its own timer ended it). */
function tryConnect(host: string, port: number, timeoutMs: number, signal: AbortSignal): Promise<{ why: string; timedOut: boolean } | null> {
  return new Promise((resolve) => {
    const socket = connect({ host, port, signal });
    const done = (result: { why: string; timedOut: boolean } | null): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(result);
    };
    const timer = setTimeout(() => done({ why: `no answer within ${timeoutMs} ms`, timedOut: true }), timeoutMs);
    socket.once('connect', () => done(null));
    socket.once('error', (err: NodeJS.ErrnoException) => done({ why: err.code ?? err.message, timedOut: false }));
  });
}
