import { Command, Option } from 'clipanion';
import { LlmgwError } from '../../errors.js';
import { DEFAULT_CONFIG_SOURCE, loadConfig } from '../../config/index.js';

/** `llmgw config check`: validate a config as the server would load it, without starting anything. */
export class ConfigCheckCommand extends Command {
  static override paths = [['config', 'check']];
  static override usage = Command.Usage({
    category: 'Config',
    description: 'Validate a config file',
    details: `
      Loads the config exactly as \`llmgw run --role=server\` would: the file, then the \`LLMGW_*\` environment overrides (unless \`--no-env\`), then the schema and the cross-reference checks. Prints \`ok: FILE\` and exits 0, or prints every problem, one per line, on stderr and exits 1.

      With no \`--config\`, checks \`LLMGW_CONFIG\` if set, else the embedded default.
    `,
    examples: [
      ['Check a config file', 'llmgw config check --config llmgw.yaml'],
      ['Check the file alone, ignoring LLMGW_* variables', 'llmgw config check --config llmgw.yaml --no-env'],
    ],
  });

  config = Option.String('--config', { description: 'YAML config file (default: LLMGW_CONFIG, else the embedded default)' });
  env = Option.Boolean('--env', true, { description: 'Apply LLMGW_* environment overrides (default true; --no-env to check the file alone)' });

  override async execute(): Promise<number> {
    const env = this.context.env ?? process.env;
    const path = this.config ?? (env.LLMGW_CONFIG || undefined);
    try {
      loadConfig({ path, env: this.env ? env : {} });
    } catch (err) {
      const e = LlmgwError.from(err);
      if (e.code !== 'LLMGW_CONFIG_INVALID' && e.code !== 'LLMGW_CONFIG_UNREADABLE') throw err;
      this.context.stderr.write(`${e.message}\n`);
      return 1;
    }
    this.context.stdout.write(`ok: ${path ?? DEFAULT_CONFIG_SOURCE}\n`);
    return 0;
  }
}
