// node:http ends a connection as soon as its client closes its side (an aborting client
// does), but emits the response's 'close' only once the socket has closed, a loop turn
// or more later: tens of ms on a loaded router. A request released from the queue or
// sent to an engine in between is served to nobody, so the connection is read too.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** Whether the response can no longer reach its client. */
export function clientGone(req: IncomingMessage, res: ServerResponse): boolean {
  return res.destroyed || req.socket.destroyed || req.socket.readableEnded;
}

/**
 * Calls `fn` when the client goes: its connection ends, or the response closes (both
 * may come; `fn` must bear a second call). Returns what stops listening.
 */
export function onClientGone(req: IncomingMessage, res: ServerResponse, fn: () => void): () => void {
  const stopEnd = onEnd(req.socket, fn);
  res.on('close', fn);
  return () => {
    stopEnd();
    res.off('close', fn);
  };
}

/**
 * Who waits for each connection's end. A client that pipelines has all its requests in
 * flight at once on one socket: one listener per request made node warn of a leak past
 * ten, so a connection gets one listener that calls them all.
 */
const endWatchers = new WeakMap<Socket, Set<() => void>>();

function onEnd(socket: Socket, fn: () => void): () => void {
  let watchers = endWatchers.get(socket);
  if (watchers === undefined) {
    const all = new Set<() => void>();
    watchers = all;
    endWatchers.set(socket, all);
    socket.once('end', () => {
      for (const f of all) f();
    });
  }
  watchers.add(fn);
  return () => watchers.delete(fn);
}
