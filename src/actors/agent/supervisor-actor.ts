import { LlmgwError } from '../../errors.js';
import type { Outcome, ShardEventSinkMsg, SupervisorMsg } from '../../messages/agent.js';
import type { Address } from '../../runtime/index.js';
import { defineActor } from '../../runtime/actor.js';
import { Supervisor, type SupervisorOptions } from '../../agent/supervisor/index.js';

export interface SupervisorActorArgs extends Omit<SupervisorOptions, 'onEvent'> {
  /** Actors that get every shard transition as a `shard-event` (more with `subscribe`). */
  readonly subscribers: readonly Address<ShardEventSinkMsg>[];
}

/**
 * The node's process supervisor as an actor, pinned to the agent's worker thread: the
 * child-process handles, exit listeners and watch timers of every engine live there.
 * Starting a shard takes minutes, so no handler waits for it: `start` and `stop` answer
 * with the status they set off, and the rest arrives as events.
 *
 * init adopts what a previous agent left running, so a restart of this actor (or of its
 * thread) recovers the same way an agent restart does. onStop lets go of the engines
 * without stopping them, on a stop (the agent shutting down must not take served
 * traffic down) and after a crash (the crashed incarnation's exit listeners and watch
 * timers must not report on engines the next one adopts).
 */
export const supervisorActor = defineActor<SupervisorMsg>()({
  kind: 'agent-supervisor',
  module: import.meta.url,
  mailbox: { capacity: 256, overflow: 'reject' },
  init: async (args: SupervisorActorArgs, ctx) => {
    // By name: an address that came through a message is a fresh object each time.
    const subscribers = new Map(args.subscribers.map((a) => [a.name, a]));
    const { supervisor, recovery } = await Supervisor.open({
      ...args,
      onEvent: (event) => {
        for (const s of subscribers.values()) ctx.ref(s).tell({ type: 'shard-event', event });
      },
    });
    ctx.log.info('supervisor started', { ...recovery });
    return { supervisor, subscribers };
  },
  handlers: {
    start: (s, m) => outcome(() => s.supervisor.start(m.id, m.spec)),
    stop: (s, m, ctx) =>
      outcome(() => {
        const { status, done } = s.supervisor.stop(m.id);
        done.catch((err: unknown) => ctx.log.error('stopping a shard failed', { shard: m.id, error: err }));
        return status;
      }),
    list: (s) => s.supervisor.list(),
    output: (s, m) => outcome(() => s.supervisor.output(m.id, m.lines)),
    subscribe: (s, m) => void s.subscribers.set(m.subscriber.name, m.subscriber),
  },
  onStop: (s) => s.supervisor.release(),
});

function outcome<T>(fn: () => T): Outcome<T> {
  try {
    return { ok: true, value: fn() };
  } catch (err) {
    return { ok: false, error: LlmgwError.from(err).serialize() };
  }
}
