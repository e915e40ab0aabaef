// Loading agent.yaml: YAML → ajv (which fills the defaults) → the checks a schema cannot
// express → one frozen AgentConfig, or LLMGW_CONFIG_INVALID listing every problem in the
// server config's format (`agent.yaml: listen: …`).
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { hostname, networkInterfaces, type NetworkInterfaceInfo } from 'node:os';
import { resolve } from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import { parse as parseYaml } from 'yaml';
import { LlmgwError } from '../../errors.js';
import { readConfigFile } from '../../config/load.js';
import { formatPath, formatProblem, fromAjvError } from '../../config/problems.js';
import type { ConfigProblem } from '../../config/types.js';
import { isLoopback, parseHostPort } from '../../net/host-port.js';
import { resolveFabrics } from '../discovery/index.js';
import { agentConfigSchema, type AgentConfig } from './schema.js';

export interface AgentConfigOverrides {
  listen?: string | undefined;
}

let validator: ValidateFunction | undefined;

/** Reads and validates the agent config; no path means every default. `state_dir` comes back absolute. */
export function loadAgentConfig(path: string | undefined, overrides: AgentConfigOverrides = {}): AgentConfig {
  let data: unknown = {};
  if (path !== undefined) {
    try {
      data = parseYaml(readConfigFile(path)) ?? {};
    } catch (err) {
      if (err instanceof LlmgwError) throw err;
      throw new LlmgwError('LLMGW_CONFIG_INVALID', `${path}: ${(err as Error).message.split('\n')[0]}`);
    }
  }
  if (overrides.listen !== undefined && typeof data === 'object' && data !== null) (data as Record<string, unknown>).listen = overrides.listen;
  return agentConfigFrom(data, path ?? '(defaults)');
}

/**
 * Validates an agent config given as data (what a file parses to), through the same
 * schema and checks as a file; problems are attributed to `source`. The data is copied,
 * since ajv writes the defaults into what it validates.
 */
export function agentConfigFrom(input: unknown, source: string): AgentConfig {
  const data = structuredClone(input);
  validator ??= new Ajv({ allErrors: true, useDefaults: true, verbose: true, strict: true }).compile(agentConfigSchema);
  const problems: ConfigProblem[] = validator(data)
    ? crossCheck(data as AgentConfig).map((p) => ({ source, ...p }))
    : (validator.errors ?? []).map(fromAjvError).map((p) => ({ source, path: formatPath(p.segments), message: p.message }));
  if (problems.length > 0) throw new LlmgwError('LLMGW_CONFIG_INVALID', problems.map(formatProblem).join('\n'), { problems });
  const config = data as AgentConfig;
  const mgmtAddr = config.mgmt_addr ?? defaultMgmtAddr(networkInterfaces());
  return deepFreeze({
    ...config,
    node_id: config.node_id ?? hostname(),
    mgmt_addr: mgmtAddr,
    mgmt_interface: config.mgmt_interface ?? interfaceOf(mgmtAddr, networkInterfaces()),
    state_dir: resolve(config.state_dir),
    ...(config.tls && { tls: { ca: resolve(config.tls.ca), cert: resolve(config.tls.cert), key: resolve(config.tls.key) } }),
  });
}

/**
 * The first IPv4 address not on loopback, in the order the OS lists interfaces, or
 * 127.0.0.1 on a machine with none: a single-box fleet still works, and a node whose
 * first interface is the wrong network sets mgmt_addr.
 */
export function defaultMgmtAddr(interfaces: NodeJS.Dict<NetworkInterfaceInfo[]>): string {
  for (const addrs of Object.values(interfaces)) {
    const found = addrs?.find((a) => a.family === 'IPv4' && !a.internal);
    if (found) return found.address;
  }
  return '127.0.0.1';
}

/**
 * The interface holding `addr`, or '' when none does. Linux routes all of 127/8 to the
 * loopback interface though it lists only 127.0.0.1 on it, so a 127.x address is on it.
 */
export function interfaceOf(addr: string, interfaces: NodeJS.Dict<NetworkInterfaceInfo[]>): string {
  const entries = Object.entries(interfaces);
  const exact = entries.find(([, addrs]) => addrs?.some((a) => a.address === addr));
  if (exact) return exact[0];
  if (/^127\./.test(addr)) return entries.find(([, addrs]) => addrs?.some((a) => a.family === 'IPv4' && a.internal))?.[0] ?? '';
  return '';
}

/** What the schema cannot say. */
function crossCheck(c: AgentConfig): { path: string; message: string }[] {
  const out: { path: string; message: string }[] = [];
  const { host } = parseHostPort(c.listen, 'listen');
  if (!isLoopback(host)) {
    out.push({ path: 'listen', message: `must be a loopback address (127.0.0.1, ::1, localhost), not ${host}: the control interface has no authentication and starts processes` });
  }
  const fabrics = resolveFabrics(c.fabrics, []);
  if (!fabrics.ok) for (const p of fabrics.problems) out.push({ path: 'fabrics', message: p.message });
  if (c.node_id !== undefined && !NODE_ID.test(c.node_id)) {
    out.push({ path: 'node_id', message: `must be a host name (letters, digits, '.', '_' and '-', starting and ending with a letter or digit), not ${JSON.stringify(c.node_id)}` });
  }
  if (c.mgmt_addr !== undefined && isIP(c.mgmt_addr) === 0) {
    out.push({ path: 'mgmt_addr', message: `must be an IP address other nodes can reach (10.0.0.5), not ${JSON.stringify(c.mgmt_addr)}` });
  }
  out.push(...streamProblems(c));
  return out;
}

/** A host name as hostname(1) and certificates carry it. */
const NODE_ID = /^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$/;

/**
 * With a server, exactly one of tls and insecure, and a URL scheme that agrees with it:
 * neither a forgotten key nor a typo in the URL may send the inventory in the clear.
 */
function streamProblems(c: AgentConfig): { path: string; message: string }[] {
  const out: { path: string; message: string }[] = [];
  if (c.tls !== undefined && c.insecure) return [{ path: 'insecure', message: 'tls is set too; choose one: tls for mTLS, insecure: true for plaintext on a trusted network' }];
  if (c.tls !== undefined) {
    for (const key of ['ca', 'cert', 'key'] as const) {
      const problem = unreadable(c.tls[key]);
      if (problem) out.push({ path: `tls.${key}`, message: problem });
    }
  }
  if (c.server === undefined) return out;
  if (c.tls === undefined && !c.insecure) {
    out.push({ path: 'server', message: 'needs tls (ca, cert, key) for mTLS, or insecure: true to dial plaintext HTTP/2 on a trusted network' });
  } else if (c.insecure && !c.server.startsWith('http://')) {
    out.push({ path: 'server', message: `insecure: true dials plaintext, so the URL must be http://, not ${c.server}` });
  } else if (c.tls !== undefined && !c.server.startsWith('https://')) {
    out.push({ path: 'server', message: `tls is set, so the URL must be https://, not ${c.server} (plaintext needs insecure: true instead of tls)` });
  }
  return out;
}

function unreadable(path: string): string | null {
  try {
    readFileSync(path);
    return null;
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    return `cannot read ${path}: ${e.code === 'ENOENT' ? 'no such file' : e.code === 'EACCES' ? 'permission denied' : e.message}${e.code ? ` (${e.code})` : ''}`;
  }
}

function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null) {
    for (const k of Object.keys(v)) deepFreeze((v as Record<string, unknown>)[k]);
    Object.freeze(v);
  }
  return v;
}
