import { Command } from 'clipanion';
import type { ActorStats } from '../../runtime/index.js';
import { AdminViewCommand, formatTable } from '../admin-client.js';

/** `llmgw ctl actors`: every mailbox of a running process, from its admin port. */
export class CtlActorsCommand extends AdminViewCommand<ActorStats[]> {
  static override paths = [['ctl', 'actors']];
  static override usage = Command.Usage({
    category: 'ctl',
    description: 'List the actors of a running llmgw process',
    details: 'Shows each actor with its thread, mailbox depth, high-water mark and capacity, messages processed, failures, restarts, messages dropped (drop-oldest) and rejected (refused: dead letters, also `llmgw_actor_dead_letters_total{actor,reason}` on /metrics), and handling-time p50/p99. `--admin` and `--token` default to LLMGW_ADMIN and LLMGW_ADMIN_TOKEN.',
    examples: [
      ['Table', 'llmgw ctl --admin http://127.0.0.1:4001 actors'],
      ['JSON', 'llmgw ctl actors --json'],
    ],
  });

  protected readonly apiPath = '/admin/v1/actors';
  protected render = renderTable;
}

export function renderTable(actors: ActorStats[]): string {
  const ms = (v: number | undefined | null): string => (v === undefined || v === null ? '-' : v === Infinity ? '>5s' : v < 1 ? `${(v * 1000).toFixed(0)}µs` : `${v}ms`);
  const rows = [
    ['NAME', 'THREAD', 'KIND', 'STATUS', 'MAILBOX', 'HIGH/CAP', 'PROCESSED', 'FAILURES', 'RESTARTS', 'DROPPED', 'REJECTED', 'P50', 'P99', 'DETAILS'],
    ...actors.map((a) => [
      a.name,
      a.thread,
      a.kind,
      a.status,
      String(a.mailbox),
      `${a.highWater}/${a.capacity}`,
      String(a.processed),
      String(a.failures),
      String(a.restarts),
      String(a.dropped),
      String(a.rejected),
      ms(a.handlingP50Ms),
      ms(a.handlingP99Ms),
      a.details ?? '',
    ]),
  ];
  return formatTable(rows);
}
