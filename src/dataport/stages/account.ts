import { LlmgwError } from '../../errors.js';
import { createLogger } from '../../log.js';
import type { UsageRecord } from '../../messages/accounting.js';
import type { Stage } from '../pipeline.js';
import { refuse } from '../refuse.js';
import type { RequestContext } from '../request-context.js';
import type { TenancyGate } from '../tenancy-gate.js';

const log = createLogger('dataport');

/**
 * The outermost stage: every request, whatever its ending — refused, shed, failed,
 * served, abandoned by its client, or a bug — leaves exactly one usage record, and is
 * known to be in flight until it ends (shutdown reads `active`). With tenancy on, a
 * request not billed before its last byte (every ending but a served one) is billed here.
 */
export function accountStage(usage: (record: UsageRecord) => void, active: Set<RequestContext>, gate: TenancyGate | null): Stage {
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
          gate?.bill(ctx, false);
        } catch (err) {
          log.error('billing failed', { request: ctx.record.id, error: err });
        }
        try {
          usage(ctx.record);
        } catch (err) {
          log.error('usage record lost', { request: ctx.record.id, error: err });
        }
      }
    },
  };
}
