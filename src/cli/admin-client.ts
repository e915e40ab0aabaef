import { Command, Option } from 'clipanion';
import { request } from 'undici';
import { LlmgwError } from '../errors.js';

// The flags every `llmgw ctl` command takes (class fields, as clipanion wants them).
export const adminOption = () => Option.String('--admin', { description: 'admin URL (default $LLMGW_ADMIN or http://127.0.0.1:4001)' });
export const tokenOption = () => Option.String('--token', { description: 'admin token (default $LLMGW_ADMIN_TOKEN)' });
export const jsonOption = () => Option.Boolean('--json', false, { description: 'print JSON instead of a table' });

/** GETs an admin API path of a running process; LLMGW_ADMIN_UNREACHABLE says why it failed. */
export async function adminGet<T>(admin: string | undefined, token: string | undefined, path: string): Promise<T> {
  const base = admin ?? process.env.LLMGW_ADMIN ?? 'http://127.0.0.1:4001';
  const bearer = token ?? process.env.LLMGW_ADMIN_TOKEN;
  const url = new URL(path, base);
  let res;
  try {
    res = await request(url, { headers: bearer ? { authorization: `Bearer ${bearer}` } : {}, headersTimeout: 10_000, bodyTimeout: 10_000 });
  } catch (err) {
    throw new LlmgwError('LLMGW_ADMIN_UNREACHABLE', `cannot reach the admin port at ${base}: ${(err as Error).message}`);
  }
  const body = (await res.body.json()) as unknown;
  if (res.statusCode !== 200) {
    const msg = (body as { error?: { message?: string } }).error?.message ?? `status ${res.statusCode}`;
    throw new LlmgwError('LLMGW_ADMIN_UNREACHABLE', `${url.href}: ${msg}`);
  }
  return body as T;
}

/**
 * A `llmgw ctl` command that shows one admin API view: as a table, or as JSON with
 * `--json`. An unreachable or refusing admin port is one line on stderr and exit 1.
 */
export abstract class AdminViewCommand<T> extends Command {
  admin = adminOption();
  token = tokenOption();
  json = jsonOption();

  protected abstract readonly apiPath: string;
  protected abstract render(view: T): string;

  override async execute(): Promise<number> {
    let view: T;
    try {
      view = await adminGet<T>(this.admin, this.token, this.apiPath);
    } catch (err) {
      this.context.stderr.write(`llmgw ctl: ${LlmgwError.from(err).message}\n`);
      return 1;
    }
    this.context.stdout.write(this.json ? JSON.stringify(view, null, 2) + '\n' : this.render(view));
    return 0;
  }
}

/** Left-aligned columns, two spaces apart; the first row is the header. */
export function formatTable(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) => r.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n') + '\n';
}
