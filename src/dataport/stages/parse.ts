import { LlmgwError } from '../../errors.js';
import type { Stage } from '../pipeline.js';
import { discardBody, readBody } from '../../net/read-body.js';
import { refuse } from '../refuse.js';

/** How much of an oversized body is read and dropped so its sender can read the 413. */
const DISCARD_MAX_BYTES = 64 * 1024 * 1024;
const DISCARD_MAX_MS = 10_000;

/** Reads the body within `router.max_body_bytes` and checks it is a request llmgw can route. */
export function parseStage(maxBodyBytes: number): Stage {
  return {
    name: 'parse',
    async run(ctx, next) {
      const { req, record } = ctx;
      try {
        ctx.raw = await readBody(req, maxBodyBytes);
      } catch (err) {
        // Let the client finish sending (within bounds) so that it reads the 413, then
        // close the connection: what is left of a body past the bounds is not worth reading.
        await discardBody(req, DISCARD_MAX_BYTES, DISCARD_MAX_MS);
        return refuse(ctx, LlmgwError.from(err), null, { connection: 'close' });
      }
      let parsed: unknown;
      try {
        parsed = JSON.parse(ctx.raw.toString('utf8'));
      } catch {
        parsed = undefined;
      }
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
        return refuse(ctx, new LlmgwError('LLMGW_INVALID_REQUEST', 'the request body is not a JSON object; send Content-Type: application/json with a JSON object body'));
      }
      const body = parsed as Record<string, unknown>;
      ctx.body = body;
      if (typeof body.model === 'string') record.modelAsked = body.model;
      if (typeof body.model !== 'string' || body.model === '') {
        return refuse(ctx, new LlmgwError('LLMGW_INVALID_REQUEST', "the request has no 'model'; name one of GET /v1/models"), 'model');
      }
      if (body.stream !== undefined && body.stream !== null && typeof body.stream !== 'boolean') {
        return refuse(ctx, new LlmgwError('LLMGW_INVALID_REQUEST', `'stream' must be true or false, not ${JSON.stringify(body.stream)}`), 'stream');
      }
      ctx.stream = body.stream === true;
      record.stream = ctx.stream;
      return next();
    },
  };
}
