// `llmgw ctl cordon|uncordon|drain NODE`: the operator's commands on one node.
import { Command, Option } from 'clipanion';
import type { NodeAction } from '../../admin/fleet-routes.js';
import type { NodeView } from '../../messages/control.js';
import { AdminViewCommand } from '../admin-client.js';
import { renderNodeState } from '../fleet-tables.js';

const CONNECTION = '`--admin` and `--token` default to LLMGW_ADMIN and LLMGW_ADMIN_TOKEN; `--json` prints the node as `ctl nodes --json` does.';

abstract class NodeCommand extends AdminViewCommand<NodeView> {
  node = Option.String({ name: 'node' });
  protected abstract readonly action: NodeAction;
  protected override readonly method = 'POST';

  protected get apiPath(): string {
    return `/admin/v1/nodes/${encodeURIComponent(this.node)}/${this.action}`;
  }
  protected render = renderNodeState;
}

export class CtlCordonCommand extends NodeCommand {
  static override paths = [['ctl', 'cordon']];
  static override usage = Command.Usage({
    category: 'ctl',
    description: 'Cordon a node: place nothing new on it; what runs there stays',
    details: CONNECTION,
    examples: [['Cordon gpu-07', 'llmgw ctl cordon gpu-07']],
  });
  protected readonly action = 'cordon';
}

export class CtlUncordonCommand extends NodeCommand {
  static override paths = [['ctl', 'uncordon']];
  static override usage = Command.Usage({
    category: 'ctl',
    description: 'Uncordon a node: placement may use it again',
    details: CONNECTION,
    examples: [['Uncordon gpu-07', 'llmgw ctl uncordon gpu-07']],
  });
  protected readonly action = 'uncordon';
}

export class CtlDrainCommand extends NodeCommand {
  static override paths = [['ctl', 'drain']];
  static override usage = Command.Usage({
    category: 'ctl',
    description: 'Drain a node: cordon it and move its replicas off, each replacement ready before the old one stops',
    details: `Requests in flight on the node's replicas finish, up to control.drain_grace_ms. ${CONNECTION}`,
    examples: [['Drain gpu-07', 'llmgw ctl drain gpu-07']],
  });
  protected readonly action = 'drain';
}
