// `llmgw ctl keys create|list|show|revoke|rotate`: the API keys clients present.
import { Command, Option } from 'clipanion';
import type { IssuedKeyView, KeyView } from '../../admin/tenancy-routes.js';
import type { LimitRow } from '../../messages/tenancy.js';
import { AdminViewCommand } from '../admin-client.js';
import { durationFlag } from '../tenancy-argv.js';
import { keyState, renderIssuedKey, renderKeys, renderShow } from '../tenancy-tables.js';
import { TENANCY_CONNECTION } from './ctl-tenancy-tree.js';

const KEYS = '/admin/v1/tenancy/keys';

/** What `keys create --json` and `keys rotate --json` print: what a script needs to use the key. */
function issuedJson(issued: IssuedKeyView): { id: string; key: string; prefix: string } {
  return { id: issued.record.id, key: issued.key, prefix: issued.record.prefix };
}

export class CtlKeysCreateCommand extends AdminViewCommand<IssuedKeyView> {
  static override paths = [['ctl', 'keys', 'create']];
  static override usage = Command.Usage({
    category: 'ctl',
    description: 'Create an API key for a project; its text is printed this once',
    details: `The key works as soon as the command returns. llmgw keeps only its sha256, so the text cannot be shown again: \`--json\` prints \`{id, key, prefix}\` for a script to store. \`--expires-in\` is a duration (90s, 15m, 24h, 30d, 2w); without it the key never expires. ${TENANCY_CONNECTION}`,
    examples: [
      ['A key for project chat', 'llmgw ctl keys create --project chat --name ci'],
      ['A 30-day key, as JSON', 'llmgw ctl keys create --project chat --expires-in 30d --json'],
    ],
  });
  project = Option.String('--project', { required: true, description: 'the project (name or id)' });
  name = Option.String('--name', { description: 'what the key is for, shown in lists' });
  expiresIn = Option.String('--expires-in', { description: 'how long the key works, e.g. 30d (default: no expiry)' });
  protected override readonly method = 'POST';
  protected readonly apiPath = KEYS;
  protected override get requestBody(): unknown {
    return {
      project: this.project,
      ...(this.name === undefined ? {} : { name: this.name }),
      ...(this.expiresIn === undefined ? {} : { expiresIn: durationFlag(this.expiresIn, '--expires-in') }),
    };
  }
  protected override jsonOf(issued: IssuedKeyView): unknown {
    return issuedJson(issued);
  }
  protected render(issued: IssuedKeyView): string {
    return renderIssuedKey(issued, Date.now());
  }
}

export class CtlKeysListCommand extends AdminViewCommand<KeyView[]> {
  static override paths = [['ctl', 'keys', 'list']];
  static override usage = Command.Usage({
    category: 'ctl',
    description: 'List the API keys, of every project or of one: prefix, state, last use',
    details: `Keys show by their prefix; their text is never stored. STATE says whether a key works (active, expires in …) or why not (revoked, expired). ${TENANCY_CONNECTION}`,
  });
  project = Option.String('--project', { description: 'only the keys of this project (name or id)' });
  protected get apiPath(): string {
    return this.project === undefined ? KEYS : `${KEYS}?${new URLSearchParams({ parent: this.project })}`;
  }
  protected render(keys: KeyView[]): string {
    return renderKeys(keys, Date.now());
  }
}

export class CtlKeysShowCommand extends AdminViewCommand<{ entity: KeyView; limits: LimitRow | null }> {
  static override paths = [['ctl', 'keys', 'show']];
  static override usage = Command.Usage({ category: 'ctl', description: 'Show an API key and the limits set on it', details: TENANCY_CONNECTION });
  ref = Option.String({ name: 'id' });
  protected get apiPath(): string {
    return `${KEYS}/${encodeURIComponent(this.ref)}`;
  }
  protected render(view: { entity: KeyView; limits: LimitRow | null }): string {
    return renderShow('key', view, Date.now());
  }
}

export class CtlKeysRevokeCommand extends AdminViewCommand<KeyView> {
  static override paths = [['ctl', 'keys', 'revoke']];
  static override usage = Command.Usage({
    category: 'ctl',
    description: 'Revoke an API key: refused from the moment the command returns',
    details: `The key's record stays, so its usage and audit events keep their subject. ${TENANCY_CONNECTION}`,
    examples: [['Revoke a key', 'llmgw ctl keys revoke key_4f2aC9xQ1bT7mZ0p']],
  });
  ref = Option.String({ name: 'id' });
  protected override readonly method = 'POST';
  protected get apiPath(): string {
    return `${KEYS}/${encodeURIComponent(this.ref)}/revoke`;
  }
  protected render(key: KeyView): string {
    return `key ${key.id} (${key.prefix}…) is ${keyState(key, Date.now())}\n`;
  }
}

export class CtlKeysRotateCommand extends AdminViewCommand<{ issued: IssuedKeyView; old: KeyView }> {
  static override paths = [['ctl', 'keys', 'rotate']];
  static override usage = Command.Usage({
    category: 'ctl',
    description: 'Rotate an API key: a new key for the same project, name and limits; the old one works for a grace period',
    details: `\`--grace\` is how long the old key keeps working (default 24h; 0s stops it now). The new key's text is printed this once; \`--json\` prints \`{id, key, prefix}\` of the new key. ${TENANCY_CONNECTION}`,
    examples: [['Rotate with an hour of grace', 'llmgw ctl keys rotate key_4f2aC9xQ1bT7mZ0p --grace 1h']],
  });
  ref = Option.String({ name: 'id' });
  grace = Option.String('--grace', { description: 'how long the old key keeps working (default 24h)' });
  protected override readonly method = 'POST';
  protected get apiPath(): string {
    return `${KEYS}/${encodeURIComponent(this.ref)}/rotate`;
  }
  protected override get requestBody(): unknown {
    return this.grace === undefined ? {} : { grace: durationFlag(this.grace, '--grace') };
  }
  protected override jsonOf(r: { issued: IssuedKeyView }): unknown {
    return issuedJson(r.issued);
  }
  protected render(r: { issued: IssuedKeyView; old: KeyView }): string {
    const now = Date.now();
    return `${renderIssuedKey(r.issued, now)}the old key ${r.old.id} (${r.old.prefix}…) ${keyState(r.old, now)}\n`;
  }
}
