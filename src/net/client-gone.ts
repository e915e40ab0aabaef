// node:http ends a connection as soon as its client closes its side (an aborting client
// does), but emits the response's 'close' only once the socket has closed, a loop turn
// or more later: tens of ms on a loaded router. A request released from the queue or
// sent to an engine in between is served to nobody, so the connection is read too.

import type { IncomingMessage, ServerResponse } from 'node:http';

/** Whether the response can no longer reach its client. */
export function clientGone(req: IncomingMessage, res: ServerResponse): boolean {
  return res.destroyed || req.socket.destroyed || req.socket.readableEnded;
}

/**
 * Calls `fn` when the client goes: its connection ends, or the response closes (both
 * may come; `fn` must bear a second call). Returns what stops listening.
 */
export function onClientGone(req: IncomingMessage, res: ServerResponse, fn: () => void): () => void {
  const socket = req.socket;
  socket.on('end', fn);
  res.on('close', fn);
  return () => {
    socket.off('end', fn);
    res.off('close', fn);
  };
}
