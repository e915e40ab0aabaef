import { Command } from 'clipanion';
import { LlmgwError } from '../../errors.js';
import type { ActorStats } from '../../runtime/index.js';
import { adminGet, adminOption, formatTable, jsonOption, tokenOption } from '../admin-client.js';

/** `llmgw ctl actors`: every mailbox of a running process, from its admin port. */
export class CtlActorsCommand extends Command {
  static override paths = [['ctl', 'actors']];
  static override usage = Command.Usage({
    category: 'ctl',
    description: 'List the actors of a running llmgw process',
    details: 'Shows each actor with its thread, mailbox depth, high-water mark and capacity, messages processed, failures, restarts, and handling-time p50/p99. `--admin` and `--token` default to LLMGW_ADMIN and LLMGW_ADMIN_TOKEN.',
    examples: [
      ['Table', 'llmgw ctl --admin http://127.0.0.1:4001 actors'],
      ['JSON', 'llmgw ctl actors --json'],
    ],
  });

  admin = adminOption();
  token = tokenOption();
  json = jsonOption();

  override async execute(): Promise<number> {
    let actors: ActorStats[];
    try {
      actors = await adminGet<ActorStats[]>(this.admin, this.token, '/admin/v1/actors');
    } catch (err) {
      this.context.stderr.write(`llmgw ctl: ${LlmgwError.from(err).message}\n`);
      return 1;
    }
    if (this.json) {
      this.context.stdout.write(JSON.stringify(actors, null, 2) + '\n');
      return 0;
    }
    this.context.stdout.write(renderTable(actors));
    return 0;
  }
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
