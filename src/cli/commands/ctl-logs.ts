import { Command, Option } from 'clipanion';
import type { ShardLogs } from '../../messages/control.js';
import { LlmgwError } from '../../errors.js';
import { AdminViewCommand } from '../admin-client.js';
import { renderLogs } from '../fleet-tables.js';

/** `llmgw ctl logs REPLICA|SHARD [--tail N]`: the last lines of a shard's engine output, read from its node. */
export class CtlLogsCommand extends AdminViewCommand<ShardLogs[]> {
  static override paths = [['ctl', 'logs']];
  static override usage = Command.Usage({
    category: 'ctl',
    description: 'Show the last lines of the engine output of a replica\'s shards, or of one shard',
    details:
      'The control plane asks each shard\'s agent for the output of its processes. A replica id shows every shard of it, each under a header naming the shard and its node; a shard whose output could not be read (its node unreachable) says why, and the command then exits 1. `--tail` is how many lines per shard (default 100). `--admin` and `--token` default to LLMGW_ADMIN and LLMGW_ADMIN_TOKEN.',
    examples: [
      ['Every shard of a replica', 'llmgw ctl logs llama-3.1-70b-r2'],
      ['The last 500 lines of one shard', 'llmgw ctl logs llama-3.1-70b-r2-s1 --tail 500'],
    ],
  });

  target = Option.String({ name: 'replica-or-shard' });
  tail = Option.String('--tail', { description: 'lines per shard, from 1 to 10000 (default 100)' });

  protected get apiPath(): string {
    // The admin port checks the range; a value that is no number at all is refused here, with the flag's name.
    if (this.tail !== undefined && !/^\d+$/.test(this.tail)) throw new LlmgwError('LLMGW_INVALID_REQUEST', `--tail must be a whole number of lines, not '${this.tail}'`);
    const query = this.tail === undefined ? '' : `?${new URLSearchParams({ tail: this.tail })}`;
    return `/admin/v1/logs/${encodeURIComponent(this.target)}${query}`;
  }
  protected render = renderLogs;
  protected override exitCode(logs: ShardLogs[]): number {
    return logs.some((l) => l.error !== null) ? 1 : 0;
  }
}
