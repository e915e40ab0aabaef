import type { ServerResponse } from 'node:http';
import { LlmgwError } from '../errors.js';

/** Sends `err` in the OpenAI error shape with its mapped status. */
export function sendError(res: ServerResponse, err: LlmgwError, param: string | null = null, headers: Record<string, string> = {}): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  sendJson(res, err.status, err.toOpenAI(param), headers);
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}
