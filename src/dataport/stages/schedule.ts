import type { PrefixConfig } from '../../config/types.js';
import type { LeaseRole } from '../../router/endpoint-table.js';
import type { CpuRunner } from '../../runtime/index.js';
import { hashPrefix } from '../../tasks/prefix-hash.js';
import { AttemptPlan, type PlanDeps } from '../attempt-plan.js';
import type { Stage } from '../pipeline.js';
import { promptOf, sessionKey } from '../prompt.js';
import type { RequestContext } from '../request-context.js';

/** The chained block hashes of the prompt's head, or null when it is shorter than a block. */
export function hashPromptHead(ctx: RequestContext, prefix: PrefixConfig, cpu: CpuRunner): Float64Array | Promise<Float64Array | null> | null {
  const text = promptOf(ctx);
  if (text === null || text.length < prefix.block_chars) return null;
  const input = { text, blockChars: prefix.block_chars, maxBlocks: prefix.max_blocks };
  // Hashing costs the main thread ~2.5 µs per KB; past offload_bytes the pool's hop is cheaper.
  return text.length > prefix.offload_bytes ? cpu.run<Float64Array>('hashPrefix', input) : hashPrefix(input);
}

/**
 * What the scheduler reads off the request (the prompt's head hashes, the session key)
 * and the attempt plan that picks an endpoint for each attempt (`attempt-plan.ts`).
 */
export function scheduleStage(deps: PlanDeps, prefix: PrefixConfig, cpu: CpuRunner): Stage {
  return {
    name: 'schedule',
    async run(ctx, next) {
      // Admission's pacing may have hashed the prompt already.
      ctx.prefix = ctx.profile.usesPrefix ? (ctx.prefix ?? (await hashPromptHead(ctx, prefix, cpu))) : null;
      ctx.session = sessionKey(ctx.req, ctx.body);
      const plan = new AttemptPlan(deps, ctx.route, ctx.profile, ctx.prefix, ctx.session, ctx.record, leaseRole(ctx), ctx.permit?.promptTokens ?? 0, !ctx.headCached);
      ctx.plan = plan;
      try {
        await next();
      } finally {
        plan.done(Date.now());
      }
    },
  };
}

/**
 * The first band's requests make way; lower bands' may be recalled where admission can
 * queue them again: a streamed one until its first token, a collected one until its
 * answer is sent. An answer the engine sends whole cannot be: the router would not know
 * whether the engine had begun it.
 */
function leaseRole(ctx: RequestContext): LeaseRole {
  if (ctx.band === 0) return 'first-band';
  if (ctx.readmit === null) return 'plain';
  return ctx.stream ? 'streamed-lower' : ctx.collect ? 'collected-lower' : 'plain';
}
