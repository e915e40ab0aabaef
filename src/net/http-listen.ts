// Opening and closing an HTTP port, shared by the roles that serve one.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseHostPort, urlFor } from './host-port.js';

/** Listens on `address` (HOST:PORT; port 0 picks one) and resolves with the URL it serves. */
export function listen(server: Server, address: string, what: string): Promise<string> {
  const { host, port } = parseHostPort(address, what);
  return new Promise((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(new Error(`${what} ${address}: ${err.code === 'EADDRINUSE' ? 'the address is already in use' : err.message}`)),
    );
    server.listen(port, host, () => {
      const a = server.address() as AddressInfo;
      resolve(urlFor(a.address, a.port));
    });
  });
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
