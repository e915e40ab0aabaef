import { hostname, userInfo } from 'node:os';
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

export type AdminMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** Who runs this command, for the audit trail of what it changes: `$USER@hostname`. */
export function adminActor(env: NodeJS.ProcessEnv = process.env): string {
  let user = env.USER ?? env.LOGNAME;
  if (user === undefined) {
    try {
      user = userInfo().username;
    } catch {
      // A uid without a passwd entry (a container): the host still says where it came from.
      user = 'unknown';
    }
  }
  return `${user}@${hostname()}`;
}

/**
 * Calls an admin API path of a running process, with `body` as JSON when given;
 * LLMGW_ADMIN_UNREACHABLE says why it failed.
 */
export async function adminRequest<T>(method: AdminMethod, admin: string | undefined, token: string | undefined, path: string, body?: unknown): Promise<T> {
  const base = admin !== undefined ? adminBaseUrl(admin, '--admin') : process.env.LLMGW_ADMIN ? adminBaseUrl(process.env.LLMGW_ADMIN, 'LLMGW_ADMIN') : new URL(DEFAULT_ADMIN);
  const tokenFrom = token !== undefined ? '--token' : process.env.LLMGW_ADMIN_TOKEN ? 'LLMGW_ADMIN_TOKEN' : null;
  const bearer = token ?? process.env.LLMGW_ADMIN_TOKEN;
  const url = new URL(path, base);
  let res;
  try {
    const headers: Record<string, string> = { 'x-llmgw-actor': adminActor() };
    if (bearer) headers.authorization = `Bearer ${bearer}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    res = await request(url, { method, headers, body: body === undefined ? null : JSON.stringify(body), headersTimeout: ADMIN_TIMEOUT_MS, bodyTimeout: ADMIN_TIMEOUT_MS });
  } catch (err) {
    throw new LlmgwError('LLMGW_ADMIN_UNREACHABLE', `cannot reach the admin port at ${base.href}: ${(err as Error).message}`);
  }
  const text = await res.body.text();
  let answer: unknown;
  try {
    answer = JSON.parse(text);
  } catch {
    throw new LlmgwError('LLMGW_ADMIN_UNREACHABLE', `${url.href}: status ${res.statusCode} with a body that is not JSON; is ${base.href} the admin port of llmgw?`);
  }
  if (res.statusCode !== 200) {
    const msg = (answer as { error?: { message?: string } }).error?.message ?? `status ${res.statusCode}`;
    throw new LlmgwError(res.statusCode === 401 ? 'LLMGW_UNAUTHORIZED' : 'LLMGW_ADMIN_UNREACHABLE', `${url.href}: ${msg}${res.statusCode === 401 ? tokenHint(tokenFrom) : ''}`);
  }
  return answer as T;
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
  /** POST for a command (cordon, reload), GET for a view; PUT and DELETE for a setting. */
  protected method: AdminMethod = 'GET';
  /** The JSON body to send; read, like `apiPath`, once the command line is parsed. */
  protected get requestBody(): unknown {
    return undefined;
  }
  protected abstract render(view: T): string;
  /** What `--json` prints of the answer. */
  protected jsonOf(view: T): unknown {
    return view;
  }
  /** The exit status for an answer that reports a failure of its own (a reload refused). */
  protected exitCode(_view: T): number {
    return 0;
  }

  override async execute(): Promise<number> {
    let view: T;
    try {
      view = await adminRequest<T>(this.method, this.admin, this.token, this.apiPath, this.requestBody);
    } catch (err) {
      this.context.stderr.write(`llmgw ctl: ${LlmgwError.from(err).message}\n`);
      return 1;
    }
    this.context.stdout.write(this.json ? JSON.stringify(this.jsonOf(view), null, 2) + '\n' : this.render(view));
    return this.exitCode(view);
  }
}

/** Left-aligned columns, two spaces apart; the first row is the header. */
export function formatTable(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) => r.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n') + '\n';
}
