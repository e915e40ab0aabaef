import { Command } from 'clipanion';
import type { ModelView } from '../../messages/control.js';
import { AdminViewCommand } from '../admin-client.js';
import { renderModels } from '../fleet-tables.js';

/** `llmgw ctl models`: the replicas each placed model should have and has, and why fewer are ready. */
export class CtlModelsCommand extends AdminViewCommand<ModelView[]> {
  static override paths = [['ctl', 'models']];
  static override usage = Command.Usage({
    category: 'ctl',
    description: 'List the placed models: desired and ready replicas, and why fewer are ready',
    details:
      'One line per model with profiles: its scaling bounds, the replicas the control plane keeps running now, how many are ready and how many it holds in any state; when fewer are ready than desired, why, and when the next placement after a failure may happen. `--admin` and `--token` default to LLMGW_ADMIN and LLMGW_ADMIN_TOKEN.',
    examples: [
      ['Table', 'llmgw ctl models --admin http://127.0.0.1:4001'],
      ['JSON', 'llmgw ctl models --json'],
    ],
  });

  protected readonly apiPath = '/admin/v1/models';
  protected render = renderModels;
}
