import { LlmgwError } from '../../errors.js';
import type { Stage } from '../pipeline.js';
import { discardBody, readBody } from '../../net/read-body.js';
import { refuse } from '../refuse.js';
import { parseRequestBody, validateRequest } from '../validation/index.js';

/** How much of an oversized body is read and dropped so its sender can read the 413. */
const DISCARD_MAX_BYTES = 64 * 1024 * 1024;
const DISCARD_MAX_MS = 10_000;

/**
 * Reads the body within `router.max_body_bytes`, parses it as a JSON object and checks it
 * against the OpenAI schema of its path: types and ranges of the standard fields, with
 * the OpenAI `param` of the first bad one; extension fields pass untouched.
 */
export function parseStage(maxBodyBytes: number): Stage {
  return {
    name: 'parse',
    async run(ctx, next) {
      const { req, record } = ctx;
      try {
        ctx.raw = await readBody(req, maxBodyBytes);
      } catch (err) {
        if (!(err instanceof LlmgwError)) {
          // The client hung up before its body was in: nobody is left to answer.
          record.status = 499;
          return;
        }
        // Let the client finish sending (within bounds) so that it reads the 413, then
        // close the connection: what is left of a body past the bounds is not worth reading.
        await discardBody(req, DISCARD_MAX_BYTES, DISCARD_MAX_MS);
        return refuse(ctx, err, null, { connection: 'close' });
      }
      const parsed = parseRequestBody(ctx.raw, req.headers['content-type']);
      if (!('body' in parsed)) return refuse(ctx, new LlmgwError('LLMGW_INVALID_REQUEST', parsed.message), parsed.param);
      const body = parsed.body;
      ctx.body = body;
      if (typeof body.model === 'string') record.modelAsked = body.model;
      // The engine never sees a body that fails the schema of its path (validation/).
      const fault = validateRequest(ctx.path, body);
      if (fault) return refuse(ctx, new LlmgwError('LLMGW_INVALID_REQUEST', fault.message), fault.param);
      ctx.stream = body.stream === true;
      record.stream = ctx.stream;
      return next();
    },
  };
}
