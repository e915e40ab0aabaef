// `llmgw ctl usage` and `llmgw ctl audit`: what the keys used, and who changed what.
import { Command, Option } from 'clipanion';
import type { AuditEvent, UsageGrouping, UsageRow } from '../../messages/tenancy.js';
import { AdminViewCommand } from '../admin-client.js';
import { auditPath, usagePath } from '../tenancy-argv.js';
import { renderAudit, renderUsage } from '../tenancy-tables.js';
import { TENANCY_CONNECTION } from './ctl-tenancy-tree.js';

const TIMES = 'A time is a date (2026-12-01, UTC), a date-time with its zone (2026-12-01T08:00Z), or a duration before now (24h, 30d).';

export class CtlUsageCommand extends AdminViewCommand<UsageRow[]> {
  static override paths = [['ctl', 'usage']];
  static override usage = Command.Usage({
    category: 'ctl',
    description: 'Show the usage recorded per key, project, team, org or model: requests, tokens, units, errors',
    details: `Every request that ended before the command is counted. \`--since\` is inclusive, \`--until\` exclusive; ${TIMES} One of --org, --team, --project or --key keeps only that entity's usage. \`--json\` prints one object per row with id, name, requests, promptTokens, completionTokens, cachedTokens, units and errors. ${TENANCY_CONNECTION}`,
    examples: [
      ['Per key, all time', 'llmgw ctl usage'],
      ['Per model over the last day, as JSON', 'llmgw ctl usage --by model --since 24h --json'],
      ['One team\'s projects in December', 'llmgw ctl usage --by project --team ml --since 2026-12-01 --until 2027-01-01'],
    ],
  });
  by = Option.String('--by', { description: 'group by key (default), project, team, org or model' });
  since = Option.String('--since', { description: 'from this time (inclusive)' });
  until = Option.String('--until', { description: 'up to this time (exclusive)' });
  org = Option.String('--org', { description: 'only this organization\'s usage (name or id)' });
  team = Option.String('--team', { description: 'only this team\'s usage (name or id)' });
  project = Option.String('--project', { description: 'only this project\'s usage (name or id)' });
  key = Option.String('--key', { description: 'only this key\'s usage (id)' });
  protected get apiPath(): string {
    return usagePath(this, Date.now());
  }
  protected render(rows: UsageRow[]): string {
    return renderUsage(rows, (this.by ?? 'key') as UsageGrouping);
  }
}

export class CtlAuditCommand extends AdminViewCommand<AuditEvent[]> {
  static override paths = [['ctl', 'audit']];
  static override usage = Command.Usage({
    category: 'ctl',
    description: 'Show the audit trail of the tenancy tree: who created, revoked, rotated or limited what, newest first',
    details: `ACTOR is who ran the command (\`$USER@host\` as ctl sends it) or the client's address. \`--limit\` is how many events (default 100). ${TIMES} ${TENANCY_CONNECTION}`,
    examples: [['The last 20 changes', 'llmgw ctl audit --limit 20']],
  });
  limit = Option.String('--limit', { description: 'how many events, newest first (default 100)' });
  since = Option.String('--since', { description: 'only events from this time on' });
  protected get apiPath(): string {
    return auditPath(this, Date.now());
  }
  protected render = renderAudit;
}
