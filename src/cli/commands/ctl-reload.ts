import { Command } from 'clipanion';
import type { ReloadResult } from '../../admin/reload-result.js';
import { AdminViewCommand } from '../admin-client.js';
import { renderReload } from '../fleet-tables.js';

/** `llmgw ctl reload`: the server reads its config file again, and applies it only when it is valid. */
export class CtlReloadCommand extends AdminViewCommand<ReloadResult> {
  static override paths = [['ctl', 'reload']];
  static override usage = Command.Usage({
    category: 'ctl',
    description: 'Reload the server\'s config file: models added, removed or changed, or the file\'s problems',
    details:
      'The server reads the file it was started with. A valid file is applied: a model\'s scaling and profiles change in place, a model gone is drained, then stopped. A file with problems is not applied at all: the server runs on as before, the problems are printed (file, path and reason), and the command exits 1. `--admin` and `--token` default to LLMGW_ADMIN and LLMGW_ADMIN_TOKEN.',
    examples: [
      ['Reload', 'llmgw ctl reload'],
      ['JSON', 'llmgw ctl reload --json'],
    ],
  });

  protected readonly apiPath = '/admin/v1/reload';
  protected override readonly method = 'POST';
  protected render = renderReload;
  protected override exitCode(result: ReloadResult): number {
    return result.ok ? 0 : 1;
  }
}
