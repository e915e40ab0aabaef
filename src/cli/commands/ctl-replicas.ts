import { Command, Option } from 'clipanion';
import type { ReplicaView } from '../../messages/control.js';
import { AdminViewCommand } from '../admin-client.js';
import { renderReplicas } from '../fleet-tables.js';

/** `llmgw ctl replicas [--model M]`: every replica and its shards, where they run and how they stand. */
export class CtlReplicasCommand extends AdminViewCommand<ReplicaView[]> {
  static override paths = [['ctl', 'replicas']];
  static override usage = Command.Usage({
    category: 'ctl',
    description: 'List the replicas and their shards: node, rank, GPUs, port, state and why',
    details:
      'One line per shard, grouped by replica: the replica\'s model, profile, state and how long it has been in it (recovered: adopted from an agent\'s report after a restart of the server), then each shard\'s node, rank, GPUs, HTTP port and state as its agent last reported. WHY is the replica\'s reason, then the shard\'s. `--model` shows one model\'s replicas. `--admin` and `--token` default to LLMGW_ADMIN and LLMGW_ADMIN_TOKEN.',
    examples: [
      ['Table', 'llmgw ctl replicas --admin http://127.0.0.1:4001'],
      ['One model, as JSON', 'llmgw ctl replicas --model llama-3.1-8b --json'],
    ],
  });

  model = Option.String('--model', { description: 'only the replicas of this model' });

  protected get apiPath(): string {
    return this.model === undefined ? '/admin/v1/replicas' : `/admin/v1/replicas?${new URLSearchParams({ model: this.model })}`;
  }
  protected render(replicas: ReplicaView[]): string {
    return renderReplicas(replicas, Date.now());
  }
}
