import type { PrefixConfig } from '../../config/types.js';
import { LlmgwError } from '../../errors.js';
import { createLogger } from '../../log.js';
import type { Admission, FirstTokenSeen, Permit } from '../../router/admission/admission.js';
import type { EndpointTable } from '../../router/endpoint-table.js';
import type { PrefixIndex } from '../../router/scheduler/prefix-index.js';
import type { CpuRunner } from '../../runtime/index.js';
import { onClientGone } from '../../net/client-gone.js';
import type { Stage } from '../pipeline.js';
import { promptOf } from '../prompt.js';
import { refuse } from '../refuse.js';
import type { RequestContext } from '../request-context.js';
import { hashPromptHead } from './schedule.js';

const log = createLogger('dataport');

/** What prefill pacing reads to tell the tokens an engine will prefill from those it holds. */
export interface AdmitDeps {
  table: EndpointTable;
  prefixIndex: PrefixIndex;
  prefix: PrefixConfig;
  cpu: CpuRunner;
}

/**
 * Admission by band (`router/admission`): the request goes at once, or waits in its
 * band's queue until released, shed (429) or timed out (503). Its permit is released
 * when the request ends, whatever the ending.
 */
export function admitStage(deps: AdmitDeps): Stage {
  return {
    name: 'admit',
    async run(ctx, next) {
      const admission = ctx.route.admission;
      ctx.permit = null;
      if (!admission) return next();
      const tokens = admission.paces(ctx.band) ? await tokensToPrefill(ctx, deps) : 0;
      let permit = admission.tryAdmit(ctx.band, Date.now(), tokens, seenAs(ctx));
      if (!permit) {
        if (log.enabled('debug')) log.debug('queued', { request: ctx.record.id, model: ctx.route.entry.name, band: ctx.record.band, why: admission.holdReason(ctx.band, Date.now(), tokens) });
        permit = await queue(ctx, admission, tokens);
        if (!permit) return;
      }
      ctx.permit = permit;
      ctx.readmit = async () => {
        const back = await queue(ctx, admission, tokens, permit);
        if (back) ctx.permit = permit = back;
        return back !== null;
      };
      try {
        await next();
      } finally {
        // Whatever the ending, the request no longer holds capacity: those waiting may go.
        permit.release(Date.now());
      }
    },
  };
}

function seenAs(ctx: RequestContext): FirstTokenSeen {
  return ctx.stream ? 'streamed' : ctx.collect ? 'collected' : 'whole';
}

/**
 * The prompt tokens an engine is expected to prefill, at four characters a token: the
 * prompt less the head the prefix index says an engine of the model served last, as
 * its prefix cache holds that. Admission decides before the scheduler picks, so this
 * trusts the prefix scorer to send the request there; the hashes are kept for it.
 */
async function tokensToPrefill(ctx: RequestContext, deps: AdmitDeps): Promise<number> {
  const text = promptOf(ctx);
  if (text === null) return 0;
  let cached = 0;
  if (ctx.profile.usesPrefix) {
    ctx.prefix = await hashPromptHead(ctx, deps.prefix, deps.cpu);
    if (ctx.prefix !== null) cached = deps.prefixIndex.servedDepth(ctx.prefix, deps.table.forModel(ctx.route.chain[0]!)) * deps.prefix.block_chars;
  }
  ctx.headCached = cached > 0;
  return Math.ceil(Math.max(0, text.length - cached) / 4);
}

/**
 * Waits in the admission queue; the permit when released, null when the request was
 * answered (shed, timed out) or its client left. `recalled`: the permit of a request an
 * engine gave back, which rejoins at the head of its band (`Admission.rejoin`).
 */
async function queue(ctx: RequestContext, admission: Admission, tokens: number, recalled?: Permit | null): Promise<Permit | null> {
  const { req, res, record } = ctx;
  const left = new AbortController();
  const stopWatching = onClientGone(req, res, () => left.abort());
  const queuedAt = performance.now();
  let permit: Permit | null;
  try {
    permit = await (recalled ? admission.rejoin(recalled, left.signal) : admission.wait(ctx.band, Date.now(), left.signal, tokens, seenAs(ctx)));
  } catch (err) {
    record.queueMs += performance.now() - queuedAt;
    refuse(ctx, LlmgwError.from(err), null, { 'retry-after': '1' });
    return null;
  } finally {
    stopWatching();
  }
  record.queueMs += performance.now() - queuedAt;
  if (left.signal.aborted) {
    // The client went away while queued (or just as it was released): nobody to answer.
    // A response already ended was answered while queued (shutdown's cut), which the record keeps.
    permit?.release(Date.now());
    if (!res.writableEnded) record.status = 499;
    return null;
  }
  return permit;
}
