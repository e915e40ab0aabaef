import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { LlmgwError } from '../errors.js';

/**
 * Answers what node:http could not parse as a request (a garbage request line, headers
 * past the limit, broken chunked framing, a header timeout) in the OpenAI error shape,
 * where Node's default writes a bare status line, then closes the connection: past a
 * parse error nothing more on it can be trusted.
 */
export function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  // As Node's own handler: nothing may be written into a response already under way.
  const current = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (err.code === 'ECONNRESET' || !socket.writable || current?.headersSent) {
    socket.destroy();
    return;
  }
  const e =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? new LlmgwError('LLMGW_HEADERS_TOO_LARGE', 'the request headers are larger than the server accepts; send fewer or shorter headers')
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? new LlmgwError('LLMGW_REQUEST_TIMEOUT', 'the request did not arrive in time; send it whole and promptly')
        : new LlmgwError('LLMGW_INVALID_REQUEST', `the request is not valid HTTP/1.1 (${err.code ?? err.message})`);
  const body = JSON.stringify(e.toOpenAI());
  socket.end(
    `HTTP/1.1 ${e.status} ${STATUS_CODES[e.status] ?? ''}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}
