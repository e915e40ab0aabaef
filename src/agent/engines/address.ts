import { isIP } from 'node:net';

/** `10.0.0.1:6379`, or `[fd00::1]:6379` for IPv6. */
export function hostPort(host: string, port: number): string {
  return isIP(host) === 6 ? `[${host}]:${port}` : `${host}:${port}`;
}

/** The address the agent dials to reach a server bound to `host` on its own node. */
export function localDialHost(host: string): string {
  if (host === '0.0.0.0') return '127.0.0.1';
  if (host === '::' || host === '[::]') return '::1';
  return host.replace(/^\[(.*)\]$/, '$1');
}

/** `http://127.0.0.1:8000`, bracketing IPv6. */
export function httpBase(host: string, port: number): string {
  return `http://${hostPort(host, port)}`;
}
