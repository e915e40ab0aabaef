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
