import { Command } from 'clipanion';
import { configSchemaJson } from '../../config/index.js';

/** `llmgw config schema`: the JSON Schema of llmgw.yaml, for editors and CI. */
export class ConfigSchemaCommand extends Command {
  static override paths = [['config', 'schema']];
  static override usage = Command.Usage({
    category: 'Config',
    description: 'Print the JSON Schema of llmgw.yaml',
    details: `
      The same schema the server validates its config with; \`schema/llmgw.schema.json\` in the package is a copy of it. Point an editor at it with a first line of \`# yaml-language-server: $schema=<path to llmgw.schema.json>\` for completion and help on every key.
    `,
    examples: [['Write the schema to a file', 'llmgw config schema > llmgw.schema.json']],
  });

  override async execute(): Promise<number> {
    this.context.stdout.write(configSchemaJson());
    return 0;
  }
}
