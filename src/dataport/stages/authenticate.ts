import type { IncomingMessage } from 'node:http';
import { LlmgwError } from '../../errors.js';
import type { AuthFailure, Directory, KeyView } from '../../tenancy/directory.js';
import type { Stage } from '../pipeline.js';
import { refuse } from '../refuse.js';
import type { TenancyGate } from '../tenancy-gate.js';

/**
 * With tenancy on, every request needs a working API key (`Authorization: Bearer
 * sk-llmgw-…`), checked before its body is read: a client without one costs a header
 * lookup and a hash. A request is also refused while its record could not be billed
 * (the usage journal cannot be written): an answer nobody pays for is not given.
 */
export function authenticateStage(gate: TenancyGate): Stage {
  return {
    name: 'authenticate',
    async run(ctx, next) {
      if (gate.journal.broken) {
        return refuse(ctx, new LlmgwError('LLMGW_USAGE_UNAVAILABLE', `usage cannot be recorded (${gate.journal.reason ?? 'the journal is not writable'}), so the request is refused rather than served unbilled`), null, { 'retry-after': '1' });
      }
      const found = authenticate(gate.directory, ctx.req, Date.now());
      if (found instanceof LlmgwError) return refuse(ctx, found);
      ctx.tenant = { view: found, units: null, rate: null, budget: null };
      return next();
    },
  };
}

/** The key a request presents, or the 401 it gets. Shared with `/v1/models`. */
export function authenticate(directory: Directory, req: IncomingMessage, now: number): KeyView | LlmgwError {
  const text = bearerOf(req);
  if (text === null) return new LlmgwError('LLMGW_UNAUTHORIZED', 'no API key: send it as Authorization: Bearer sk-llmgw-…');
  const found = directory.authenticate(text, now);
  return typeof found === 'string' ? new LlmgwError('LLMGW_UNAUTHORIZED', REASONS[found]) : found;
}

const REASONS: Record<AuthFailure, string> = {
  unknown: 'the API key is not valid',
  revoked: 'the API key has been revoked',
  expired: 'the API key has expired',
};

const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;

function bearerOf(req: IncomingMessage): string | null {
  const h = req.headers.authorization;
  if (typeof h !== 'string') return null;
  const m = BEARER.exec(h);
  return m ? m[1]! : null;
}
