import { Command } from 'clipanion';
import type { NodeView } from '../../messages/control.js';
import { AdminViewCommand } from '../admin-client.js';
import { renderNodes } from '../fleet-tables.js';

/** `llmgw ctl nodes`: every node the control plane knows, its GPUs and why one is skipped. */
export class CtlNodesCommand extends AdminViewCommand<NodeView[]> {
  static override paths = [['ctl', 'nodes']];
  static override usage = Command.Usage({
    category: 'ctl',
    description: 'List the fleet\'s nodes: state, agent, GPUs and fabrics',
    details:
      'One line per node: its state (ready, cordoned, draining, unreachable, lost), whether its agent is connected and when it was last heard from, its GPUs by class and how many are free for placement, its fabrics with their adapters, and the replicas with a shard on it. Then one line per GPU: class, the replica holding it, and why placement skips it. `--admin` and `--token` default to LLMGW_ADMIN and LLMGW_ADMIN_TOKEN.',
    examples: [
      ['Table', 'llmgw ctl nodes --admin http://127.0.0.1:4001'],
      ['JSON', 'llmgw ctl nodes --json'],
    ],
  });

  protected readonly apiPath = '/admin/v1/nodes';
  protected render(nodes: NodeView[]): string {
    return renderNodes(nodes, Date.now());
  }
}
