import type { IncomingMessage } from 'node:http';
import { LlmgwError } from '../errors.js';

/**
 * Reads a request body up to `limit` bytes. A declared Content-Length over the limit is
 * refused before a byte is read; an undeclared one is cut off as soon as it passes it.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) return Promise.reject(tooLarge(declared, limit));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.removeAllListeners('data');
        req.resume(); // discard the rest without buffering it
        reject(tooLarge(size, limit));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)));
    req.on('error', reject);
  });
}

function tooLarge(size: number, limit: number): LlmgwError {
  return new LlmgwError('LLMGW_BODY_TOO_LARGE', `request body of ${size} bytes exceeds the limit of ${limit} bytes (router.max_body_bytes); send a smaller request`, {
    limit,
  });
}

/**
 * Reads and drops what is left of a refused body, up to `maxBytes` or `timeoutMs`, so
 * the client finishes sending and reads the answer instead of a connection reset (a
 * client still writing when the socket closes sees EPIPE, not the 413). Resolves true
 * when the body ended within the bounds.
 */
export function discardBody(req: IncomingMessage, maxBytes: number, timeoutMs: number): Promise<boolean> {
  if (req.complete) return Promise.resolve(true);
  return new Promise((resolve) => {
    let size = 0;
    const done = (ended: boolean): void => {
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      resolve(ended);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > maxBytes) done(false);
    };
    const onEnd = (): void => done(true);
    const onError = (): void => done(false);
    const timer = setTimeout(() => done(false), timeoutMs);
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.resume();
  });
}
