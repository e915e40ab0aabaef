import { isIP } from 'node:net';
import { LlmgwError } from '../errors.js';

export interface HostPort {
  host: string;
  port: number;
}

/** Parses `HOST:PORT`, `[v6]:PORT` or `:PORT` (all interfaces). Port 0 picks a free port. */
export function parseHostPort(value: string, what: string): HostPort {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(value.trim());
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) {
    throw new LlmgwError('LLMGW_INVALID_REQUEST', `${what}: '${value}' is not HOST:PORT (e.g. 127.0.0.1:4000)`);
  }
  return { host: m[1] ?? (m[2] || '0.0.0.0'), port };
}

/** A URL for an address a server is bound to; wildcard hosts become loopback. */
export function urlFor(host: string, port: number, scheme = 'http'): string {
  const h = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  return `${scheme}://${h.includes(':') ? `[${h}]` : h}:${port}`;
}

/** Whether `host` is this machine's loopback: reachable from this host alone. */
export function isLoopback(host: string): boolean {
  if (host === 'localhost' || host === '::1') return true;
  return isIP(host) === 4 && host.startsWith('127.');
}
