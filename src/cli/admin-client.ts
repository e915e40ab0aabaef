import { Command, Option } from 'clipanion';
import { request } from 'undici';
import { LlmgwError } from '../errors.js';
import { parseHostPort, urlFor } from '../net/host-port.js';

// The flags every `llmgw ctl` command takes (class fields, as clipanion wants them).
export const adminOption = () => Option.String('--admin', { description: `admin port: a URL or HOST:PORT (default $LLMGW_ADMIN or ${DEFAULT_ADMIN})` });
export const tokenOption = () => Option.String('--token', { description: 'admin token (default $LLMGW_ADMIN_TOKEN)' });
export const jsonOption = () => Option.Boolean('--json', false, { description: 'print JSON instead of a table' });

const DEFAULT_ADMIN = 'http://127.0.0.1:4001';

/**
 * The admin port's base URL from `--admin` or LLMGW_ADMIN (`from` names which): a URL, or
 * HOST:PORT as `admin_listen` is written, which gets `http://`.
 */
export function adminBaseUrl(value: string, from: string): URL {
  const expected = `expected an http(s) URL or HOST:PORT (e.g. ${DEFAULT_ADMIN} or 127.0.0.1:4001), got '${value}'`;
  if (!value.includes('://')) {
    try {
      const { host, port } = parseHostPort(value, from);
      return new URL(urlFor(host, port));
    } catch {
      throw new LlmgwError('LLMGW_INVALID_REQUEST', `${from}: ${expected}`);
    }
  }
  const url = URL.canParse(value) ? new URL(value) : null;
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) throw new LlmgwError('LLMGW_INVALID_REQUEST', `${from}: ${expected}`);
  return url;
}

/** Longer than the admin port's longest ask (a shard's logs, read from its node's agent). */
const ADMIN_TIMEOUT_MS = 20_000;

/** Calls an admin API path of a running process; LLMGW_ADMIN_UNREACHABLE says why it failed. */
export async function adminRequest<T>(method: 'GET' | 'POST', admin: string | undefined, token: string | undefined, path: string): Promise<T> {
  const base = admin !== undefined ? adminBaseUrl(admin, '--admin') : process.env.LLMGW_ADMIN ? adminBaseUrl(process.env.LLMGW_ADMIN, 'LLMGW_ADMIN') : new URL(DEFAULT_ADMIN);
  const tokenFrom = token !== undefined ? '--token' : process.env.LLMGW_ADMIN_TOKEN ? 'LLMGW_ADMIN_TOKEN' : null;
  const bearer = token ?? process.env.LLMGW_ADMIN_TOKEN;
  const url = new URL(path, base);
  let res;
  try {
    res = await request(url, { method, headers: bearer ? { authorization: `Bearer ${bearer}` } : {}, headersTimeout: ADMIN_TIMEOUT_MS, bodyTimeout: ADMIN_TIMEOUT_MS });
  } catch (err) {
    throw new LlmgwError('LLMGW_ADMIN_UNREACHABLE', `cannot reach the admin port at ${base.href}: ${(err as Error).message}`);
  }
  const text = await res.body.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new LlmgwError('LLMGW_ADMIN_UNREACHABLE', `${url.href}: status ${res.statusCode} with a body that is not JSON; is ${base.href} the admin port of llmgw?`);
  }
  if (res.statusCode !== 200) {
    const msg = (body as { error?: { message?: string } }).error?.message ?? `status ${res.statusCode}`;
    throw new LlmgwError(res.statusCode === 401 ? 'LLMGW_UNAUTHORIZED' : 'LLMGW_ADMIN_UNREACHABLE', `${url.href}: ${msg}${res.statusCode === 401 ? tokenHint(tokenFrom) : ''}`);
  }
  return body as T;
}

/** What to do about a refused token, given where ours came from (null: none was sent). */
function tokenHint(from: string | null): string {
  return from === null
    ? '; pass the admin_token with --token or LLMGW_ADMIN_TOKEN'
    : `; the token from ${from} is not the server's admin_token`;
}

/**
 * A `llmgw ctl` command that shows one admin API view: as a table, or as JSON with
 * `--json`. An unreachable or refusing admin port is one line on stderr and exit 1.
 */
export abstract class AdminViewCommand<T> extends Command {
  admin = adminOption();
  token = tokenOption();
  json = jsonOption();

  /** The path (with its query) to call; read once the command line is parsed. */
  protected abstract readonly apiPath: string;
  /** POST for a command (cordon, reload), GET for a view. */
  protected readonly method: 'GET' | 'POST' = 'GET';
  protected abstract render(view: T): string;
  /** The exit status for an answer that reports a failure of its own (a reload refused). */
  protected exitCode(_view: T): number {
    return 0;
  }

  override async execute(): Promise<number> {
    let view: T;
    try {
      view = await adminRequest<T>(this.method, this.admin, this.token, this.apiPath);
    } catch (err) {
      this.context.stderr.write(`llmgw ctl: ${LlmgwError.from(err).message}\n`);
      return 1;
    }
    this.context.stdout.write(this.json ? JSON.stringify(view, null, 2) + '\n' : this.render(view));
    return this.exitCode(view);
  }
}

/** Left-aligned columns, two spaces apart; the first row is the header. */
export function formatTable(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) => r.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n') + '\n';
}
