import { Command } from 'clipanion';
import { VERSION } from '../../version.js';

export class VersionCommand extends Command {
  static override paths = [['version'], ['--version'], ['-v']];
  static override usage = Command.Usage({ description: 'Print the llmgw version' });

  override async execute(): Promise<number> {
    this.context.stdout.write(`llmgw ${VERSION} (node ${process.version})\n`);
    return 0;
  }
}
