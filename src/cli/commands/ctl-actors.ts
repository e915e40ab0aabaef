import { Command, Option } from 'clipanion';
import { request } from 'undici';
import { LlmgwError } from '../../errors.js';
import type { ActorStats } from '../../runtime/index.js';

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

  admin = Option.String('--admin', { description: 'admin URL (default $LLMGW_ADMIN or http://127.0.0.1:4001)' });
  token = Option.String('--token', { description: 'admin token (default $LLMGW_ADMIN_TOKEN)' });
  json = Option.Boolean('--json', false, { description: 'print JSON instead of a table' });

  override async execute(): Promise<number> {
    const base = this.admin ?? process.env.LLMGW_ADMIN ?? 'http://127.0.0.1:4001';
    const token = this.token ?? process.env.LLMGW_ADMIN_TOKEN;
    let actors: ActorStats[];
    try {
      actors = await fetchActors(base, token);
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

async function fetchActors(base: string, token: string | undefined): Promise<ActorStats[]> {
  const url = new URL('/admin/v1/actors', base);
  let res;
  try {
    res = await request(url, { headers: token ? { authorization: `Bearer ${token}` } : {}, headersTimeout: 10_000, bodyTimeout: 10_000 });
  } catch (err) {
    throw new LlmgwError('LLMGW_ADMIN_UNREACHABLE', `cannot reach the admin port at ${base}: ${(err as Error).message}`);
  }
  const body = (await res.body.json()) as unknown;
  if (res.statusCode !== 200) {
    const msg = (body as { error?: { message?: string } }).error?.message ?? `status ${res.statusCode}`;
    throw new LlmgwError('LLMGW_ADMIN_UNREACHABLE', `${url.href}: ${msg}`);
  }
  return body as ActorStats[];
}

export function renderTable(actors: ActorStats[]): string {
  const ms = (v: number | undefined | null): string => (v === undefined || v === null ? '-' : v === Infinity ? '>5s' : v < 1 ? `${(v * 1000).toFixed(0)}µs` : `${v}ms`);
  const rows = [
    ['NAME', 'THREAD', 'KIND', 'STATUS', 'MAILBOX', 'HIGH/CAP', 'PROCESSED', 'FAILURES', 'RESTARTS', 'DROPPED', 'REJECTED', 'P50', 'P99'],
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
    ]),
  ];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n') + '\n';
}
