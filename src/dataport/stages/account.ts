import { LlmgwError } from '../../errors.js';
import { createLogger } from '../../log.js';
import type { UsageRecord } from '../../messages/accounting.js';
import type { Stage } from '../pipeline.js';
import { refuse } from '../refuse.js';
import type { RequestContext } from '../request-context.js';

const log = createLogger('dataport');

/**
 * The outermost stage: every request, whatever its ending — refused, shed, failed,
 * served, abandoned by its client, or a bug — leaves exactly one usage record, and is
 * known to be in flight until it ends (shutdown reads `active`).
 */
export function accountStage(usage: (record: UsageRecord) => void, active: Set<RequestContext>): Stage {
  return {
    name: 'account',
    async run(ctx, next) {
      active.add(ctx);
      try {
        await next();
      } catch (err) {
        log.error('request failed', { request: ctx.record.id, error: err });
        if (!ctx.res.headersSent) refuse(ctx, LlmgwError.from(err));
        else ctx.res.destroy();
        ctx.record.status ||= 500;
        ctx.record.error ??= 'LLMGW_HANDLER_FAILED';
      } finally {
        active.delete(ctx);
        ctx.record.durationMs = performance.now() - ctx.arrived;
        try {
          usage(ctx.record);
        } catch (err) {
          log.error('usage record lost', { request: ctx.record.id, error: err });
        }
      }
    },
  };
}
