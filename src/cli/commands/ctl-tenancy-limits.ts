// `llmgw ctl limits show|set`: what each level of the tenancy tree allows.
import { Command, Option } from 'clipanion';
import type { LimitsCleared } from '../../admin/tenancy-routes.js';
import { LlmgwError } from '../../errors.js';
import type { LimitRow } from '../../messages/tenancy.js';
import { AdminViewCommand, type AdminMethod } from '../admin-client.js';
import { levelPath, limitsFromFlags, NONE, scopeFromFlags } from '../tenancy-argv.js';
import { renderLimitRow, renderLimits } from '../tenancy-tables.js';
import { TENANCY_CONNECTION } from './ctl-tenancy-tree.js';

const levelOptions = {
  org: () => Option.String('--org', { description: 'an organization (name or id)' }),
  team: () => Option.String('--team', { description: 'a team (name or id)' }),
  project: () => Option.String('--project', { description: 'a project (name or id)' }),
  key: () => Option.String('--key', { description: 'an API key (id)' }),
};

export class CtlLimitsShowCommand extends AdminViewCommand<LimitRow[]> {
  static override paths = [['ctl', 'limits', 'show']];
  static override usage = Command.Usage({
    category: 'ctl',
    description: 'Show the limits set at every level, or at one',
    details: `A request is held to every level on its key's chain (key, project, team, org): the most restrictive value of each limit along it. ${TENANCY_CONNECTION}`,
    examples: [
      ['Every level', 'llmgw ctl limits show'],
      ['One project', 'llmgw ctl limits show --project chat'],
    ],
  });
  org = levelOptions.org();
  team = levelOptions.team();
  project = levelOptions.project();
  key = levelOptions.key();
  protected get apiPath(): string {
    const level = scopeFromFlags(this);
    return level === null ? '/admin/v1/tenancy/limits' : levelPath(level);
  }
  protected render = renderLimits;
}

export class CtlLimitsSetCommand extends AdminViewCommand<LimitRow | null | LimitsCleared> {
  static override paths = [['ctl', 'limits', 'set']];
  static override usage = Command.Usage({
    category: 'ctl',
    description: 'Set limits at one level: requests and tokens per minute, a budget, the models, band and routing profile',
    details: `Name the level with one of --org, --team, --project or --key. Flags not given keep their value; \`${NONE}\` clears one (\`--budget ${NONE}\` clears the budget and its period); \`--clear\` drops every limit of the level. A budget is in the models' units per day or month (UTC). The new limits hold from the moment the command returns. ${TENANCY_CONNECTION}`,
    examples: [
      ['60 requests a minute for a project', 'llmgw ctl limits set --project chat --rpm 60'],
      ['A monthly budget and two models for a team', 'llmgw ctl limits set --team ml --budget 500 --period month --models llama-3.1-8b,qwen-7b'],
      ['Drop a key\'s own limits', 'llmgw ctl limits set --key key_4f2aC9xQ1bT7mZ0p --clear'],
    ],
  });
  org = levelOptions.org();
  team = levelOptions.team();
  project = levelOptions.project();
  key = levelOptions.key();
  rpm = Option.String('--rpm', { description: `requests per minute (${NONE}: no limit here)` });
  tpm = Option.String('--tpm', { description: `tokens (prompt + completion) per minute (${NONE}: no limit here)` });
  budget = Option.String('--budget', { description: `units per --period (${NONE}: no budget here)` });
  period = Option.String('--period', { description: 'what the budget is per: day or month' });
  models = Option.String('--models', { description: `the models allowed, comma-separated (${NONE}: every model)` });
  band = Option.String('--band', { description: `the admission band of requests (${NONE}: inherited)` });
  profile = Option.String('--profile', { description: `the routing profile of requests (${NONE}: inherited)` });
  clear = Option.Boolean('--clear', false, { description: 'drop every limit of the level' });

  private get level(): { scope: 'org' | 'team' | 'project' | 'key'; ref: string } {
    const level = scopeFromFlags(this);
    if (level === null) throw new LlmgwError('LLMGW_INVALID_REQUEST', 'name the level to set: --org, --team, --project or --key');
    return level;
  }
  protected override method: AdminMethod = 'PUT';
  override execute(): Promise<number> {
    // Known only once the command line is parsed.
    this.method = this.clear ? 'DELETE' : 'PUT';
    return super.execute();
  }
  protected get apiPath(): string {
    return levelPath(this.level);
  }
  protected override get requestBody(): unknown {
    const body = limitsFromFlags(this);
    const given = Object.keys(body).length;
    if (this.clear) {
      if (given > 0) throw new LlmgwError('LLMGW_INVALID_REQUEST', '--clear drops every limit of the level: give it without --rpm, --tpm, --budget, --period, --models, --band or --profile');
      return undefined;
    }
    if (given === 0) throw new LlmgwError('LLMGW_INVALID_REQUEST', 'nothing to set: give --rpm, --tpm, --budget with --period, --models, --band or --profile (or --clear)');
    return body;
  }
  protected render(row: LimitRow | null | LimitsCleared): string {
    return row !== null && 'cleared' in row ? `every limit of ${this.level.scope} ${this.level.ref} is cleared\n` : renderLimitRow(row);
  }
}
