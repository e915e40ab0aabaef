import { Command, Option } from 'clipanion';
import type { PlacementExplanation } from '../../messages/control.js';
import { AdminViewCommand } from '../admin-client.js';
import { renderExplanation } from '../fleet-tables.js';

/** `llmgw ctl explain-placement MODEL`: where a replica would go now, and why every other candidate cannot take it. */
export class CtlExplainPlacementCommand extends AdminViewCommand<PlacementExplanation> {
  static override paths = [['ctl', 'explain-placement']];
  static override usage = Command.Usage({
    category: 'ctl',
    description: 'Explain where a replica of a model can be placed, and why every other candidate was rejected',
    details:
      'Runs placement for one more replica of MODEL on the fleet as it is now, without placing it: the profile and nodes it would use, then every candidate (a profile, a fabric or a node) with the code and reason it was rejected. `--admin` and `--token` default to LLMGW_ADMIN and LLMGW_ADMIN_TOKEN.',
    examples: [
      ['Table', 'llmgw ctl explain-placement llama-3.1-70b'],
      ['JSON', 'llmgw ctl explain-placement llama-3.1-70b --json'],
    ],
  });

  model = Option.String({ name: 'model' });

  protected get apiPath(): string {
    return `/admin/v1/placement/${encodeURIComponent(this.model)}`;
  }
  protected render = renderExplanation;
}
