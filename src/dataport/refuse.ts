import type { LlmgwError } from '../errors.js';
import type { RequestContext } from './request-context.js';
import { sendError } from '../net/respond.js';

/** Answers the request with `err` in the OpenAI shape and records how it ended. */
export function refuse(ctx: RequestContext, err: LlmgwError, param: string | null = null, headers: Record<string, string> = {}): void {
  sendError(ctx.res, err, param, { 'x-request-id': ctx.record.id, ...headers });
  ctx.record.status = err.status;
  ctx.record.error = err.code;
}
