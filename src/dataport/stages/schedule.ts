import type { PrefixConfig } from '../../config/types.js';
import type { CpuRunner } from '../../runtime/index.js';
import { hashPrefix } from '../../tasks/prefix-hash.js';
import { AttemptPlan, type PlanDeps } from '../attempt-plan.js';
import type { Stage } from '../pipeline.js';
import { promptOf, sessionKey } from '../prompt.js';
import type { RequestContext } from '../request-context.js';

/**
 * What the scheduler reads off the request (the prompt's head hashes, the session key)
 * and the attempt plan that picks an endpoint for each attempt (`attempt-plan.ts`).
 */
export function scheduleStage(deps: PlanDeps, prefix: PrefixConfig, cpu: CpuRunner): Stage {
  const prefixOf = async (ctx: RequestContext): Promise<Float64Array | null> => {
    const text = promptOf(ctx);
    if (text === null || text.length < prefix.block_chars) return null;
    const input = { text, blockChars: prefix.block_chars, maxBlocks: prefix.max_blocks };
    // Hashing costs the main thread ~2.5 µs per KB; past offload_bytes the pool's hop is cheaper.
    return text.length > prefix.offload_bytes ? cpu.run<Float64Array>('hashPrefix', input) : hashPrefix(input);
  };

  return {
    name: 'schedule',
    async run(ctx, next) {
      ctx.prefix = ctx.profile.usesPrefix ? await prefixOf(ctx) : null;
      ctx.session = sessionKey(ctx.req, ctx.body);
      const plan = new AttemptPlan(deps, ctx.route, ctx.profile, ctx.prefix, ctx.session, ctx.record, ctx.band === 0);
      ctx.plan = plan;
      try {
        await next();
      } finally {
        plan.done(Date.now());
      }
    },
  };
}
