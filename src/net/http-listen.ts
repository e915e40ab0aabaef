// Opening and closing an HTTP port, shared by the roles that serve one.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { LlmgwError } from '../errors.js';
import { parseHostPort, urlFor } from './host-port.js';

/** Where a listen address is set, for the error that says how to change it. */
export interface AddressSetting {
  /** The config key (`listen`, `admin_listen`) or, where there is no config, the flag. */
  key: string;
  /** Other ways to set it: flags, environment variables. */
  also?: readonly string[];
}

/** Listens on `address` (HOST:PORT; port 0 picks one) and resolves with the URL it serves. */
export function listen(server: Server, address: string, setting: AddressSetting): Promise<string> {
  const { host, port } = parseHostPort(address, setting.key);
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException): void => reject(listenFailed(err, address, port, setting));
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      const a = server.address() as AddressInfo;
      resolve(urlFor(a.address, a.port));
    });
  });
}

/** A failed bind as an error that names the port, the setting and how to change it. */
export function listenFailed(err: NodeJS.ErrnoException, address: string, port: number, setting: AddressSetting): LlmgwError {
  const where = setting.also?.length ? `${setting.key} (or ${setting.also.join(', ')})` : setting.key;
  const why =
    err.code === 'EADDRINUSE'
      ? `port ${port} is already in use (another llmgw, or another program); stop it, or set ${where} to a free HOST:PORT`
      : err.code === 'EADDRNOTAVAIL'
        ? `the host is not an address of this machine; set ${where} to one of its addresses (or 0.0.0.0)`
        : err.code === 'EACCES'
          ? `not allowed to bind port ${port} (ports below 1024 need privileges); set ${where} to another HOST:PORT`
          : `${err.message}; check ${where}`;
  return new LlmgwError('LLMGW_LISTEN_FAILED', `${setting.key} ${address}: ${why}`, { address, key: setting.key, errno: err.code });
}

/**
 * Stops accepting, closes idle keep-alive connections, waits for the rest up to
 * `graceMs`; then `atDeadline` may end what is still running in its own terms (an
 * error event on a stream) before every connection is closed.
 */
export function drain(server: Server, graceMs: number, atDeadline: () => void = () => {}): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      atDeadline();
      // What was just written gets a moment to leave before the sockets close.
      setImmediate(() => server.closeAllConnections());
    }, graceMs);
    timer.unref();
    server.close(() => {
      clearTimeout(timer);
      resolve();
    });
    server.closeIdleConnections();
  });
}
