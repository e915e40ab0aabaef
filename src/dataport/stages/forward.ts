import type { RouterConfig } from '../../config/types.js';
import { LlmgwError } from '../../errors.js';
import { createLogger } from '../../log.js';
import type { EnginePriority } from '../../router/endpoint-table.js';
import { attempt, type Outcome, type Relayed } from '../attempt.js';
import { clientGone } from '../../net/client-gone.js';
import type { Stage } from '../pipeline.js';
import { promptTokensOf } from '../prompt.js';
import { refuse } from '../refuse.js';
import type { RequestContext } from '../request-context.js';
import type { TenancyGate } from '../tenancy-gate.js';

const log = createLogger('dataport');

/**
 * Sends the request to each endpoint the plan picks until one answers: a failure
 * before the first byte reached the client is retried elsewhere (`attempt.ts`), then
 * the outcome is written into the usage record. With tenancy on, a served request is
 * billed right before its last byte, and with hard budgets a stream is ended once its
 * key's budget is spent mid-way.
 */
export function forwardStage(router: RouterConfig, gate: TenancyGate | null): Stage {
  const bands = router.admission.bands.length;
  return {
    name: 'forward',
    async run(ctx) {
      const { plan, req, res, record } = ctx;
      // Answered while an earlier stage awaited (shutdown's cut), or its client left:
      // nothing may be sent to an engine for a response that can no longer carry it.
      if (res.writableEnded) return;
      if (clientGone(req, res)) return settle(ctx, { kind: 'gone', ttftMs: null, relayed: null });
      let payload: string | Buffer | null = null;
      let payloadKey = '';
      const beforeEnd = gate
        ? (served: Extract<Outcome, { kind: 'served' }>): void => {
            settle(ctx, served);
            gate.bill(ctx, true);
          }
        : null;
      const checkStream = gate?.settings.hard_budgets && (ctx.stream || ctx.collect) ? budgetWatch(ctx, gate) : null;
      const asSent = ctx.body.priority;
      for (let lease = plan.next(Date.now()); lease; lease = plan.next(Date.now())) {
        const model = plan.servedModel;
        const priority = enginePriority(lease.endpoint.enginePriority, ctx.band, bands);
        const key = priority === null ? model : `${model}\u0000${priority}`;
        if (payload === null || payloadKey !== key) {
          // Re-serialising an 8 KB prompt costs the main thread ~10 µs: skip it when the
          // client already named the model that serves and nothing was added.
          if (model === ctx.body.model && ctx.raw.length > 0 && priority === null) payload = ctx.raw;
          else {
            ctx.body.model = model;
            if (priority !== null) ctx.body.priority = priority;
            else if (asSent === undefined) delete ctx.body.priority;
            else ctx.body.priority = asSent;
            payload = JSON.stringify(ctx.body);
          }
          payloadKey = key;
        }
        const sending = attempt(lease, {
          req: ctx.req,
          res,
          path: ctx.path,
          payload,
          stream: ctx.stream,
          collect: ctx.collect,
          stripUsage: ctx.stripUsage,
          requestId: record.id,
          arrived: ctx.arrived,
          firstTokenTimeoutMs: router.first_token_timeout_ms,
          idleTimeoutMs: router.idle_timeout_ms,
          onFirstToken: () => ctx.permit?.firstToken(Date.now()),
          onAnswer: () => plan.answered(Date.now()),
          cut: ctx.cut,
          beforeEnd,
          checkStream,
        });
        // attempt() counted it in the endpoint's in-flight before its first await.
        ctx.permit?.dispatched();
        const outcome = await sending;
        if (outcome.kind === 'recalled') {
          plan.recalled(lease);
          // Queued again; sent once released, unless its client left or it was answered
          // meanwhile (the queue refused it, shutdown's cut).
          const live = (): boolean => !res.writableEnded && !clientGone(req, res);
          if (live() && (await ctx.readmit!()) && live()) continue;
          if (res.writableEnded) return;
          return settle(ctx, { kind: 'gone', ttftMs: null, relayed: null });
        }
        if (outcome.kind === 'failed') {
          plan.failed(lease, outcome.error, outcome.suspect, Date.now());
          if (outcome.retry && !res.writableEnded && !clientGone(req, res)) {
            log.warn('attempt failed, trying another endpoint', { request: record.id, endpoint: lease.id, error: outcome.error.message });
            continue;
          }
          if (outcome.retry) return settle(ctx, { kind: 'gone', ttftMs: null, relayed: null });
        }
        return settle(ctx, outcome);
      }
      if (res.writableEnded || clientGone(req, res)) return settle(ctx, { kind: 'gone', ttftMs: null, relayed: null });
      const err = plan.error(Date.now());
      const headers: Record<string, string> = err.code === 'LLMGW_REQUEST_POISONED' ? { 'x-should-retry': 'false' } : { 'retry-after': '1' };
      if (record.endpoint) headers['x-llmgw-endpoint'] = record.endpoint;
      refuse(ctx, err, null, headers);
    },
  };
}

/**
 * The `priority` field for an engine that orders its queue by it, from the request's
 * admission band (the first band the most urgent); null when the engine runs no priority
 * policy or admission is off. The band decides, not the client: the field is the
 * gateway's to set once an operator says the engine reads it.
 */
function enginePriority(order: EnginePriority | null, band: number, bands: number): number | null {
  if (order === null || band < 0) return null;
  return order === 'lower-first' ? band : bands - 1 - band;
}

function settle(ctx: RequestContext, outcome: Outcome): void {
  const { record } = ctx;
  switch (outcome.kind) {
    case 'served':
      if (outcome.usage) {
        record.promptTokens = outcome.usage.promptTokens;
        record.completionTokens = outcome.usage.completionTokens;
        record.cachedTokens = outcome.usage.cachedTokens;
      } else if (outcome.generated && outcome.status < 400) {
        // An engine that ignores `include_usage` still did the work: estimated, as a cut stream is.
        charge(ctx, outcome.generated);
      }
      record.ttftMs = outcome.ttftMs;
      record.status = outcome.status;
      record.error = outcome.error;
      return;
    case 'failed': {
      const headers: Record<string, string> = record.endpoint ? { 'x-llmgw-endpoint': record.endpoint } : {};
      if (outcome.error.code === 'LLMGW_SHUTTING_DOWN') headers['retry-after'] = '1';
      // Not retried here, as the request may be what is slow: an SDK retrying it on its
      // own (the OpenAI clients retry a 504 twice) would triple the cost on a fleet that
      // is already too slow.
      if (outcome.error.code === 'LLMGW_UPSTREAM_TIMEOUT') headers['x-should-retry'] = 'false';
      refuse(ctx, outcome.error, null, headers);
      charge(ctx, outcome.generated ?? null);
      return;
    }
    case 'broken':
      record.ttftMs = outcome.ttftMs;
      log.warn('response broken mid-way', { request: record.id, endpoint: record.endpoint, error: outcome.error.message });
      charge(ctx, outcome.relayed);
      record.status = 200;
      record.error = outcome.error.code;
      return;
    case 'gone':
      record.ttftMs = outcome.ttftMs;
      charge(ctx, outcome.relayed);
      record.status = 499;
      return;
  }
}

/**
 * With `tenancy.hard_budgets`: a stream's (or a collected answer's) running cost,
 * estimated as `charge` would charge it were it cut now, against what its key's chain
 * has left. Null when the request holds no budget (none set on its chain, or served free
 * by the fallback).
 */
function budgetWatch(ctx: RequestContext, gate: TenancyGate): ((events: number) => LlmgwError | null) | null {
  const t = ctx.tenant;
  if (!t?.budget || t.units === null || !t.budget.levels.some((l) => l.budget !== null)) return null;
  const units = t.units;
  const budget = t.budget;
  const promptTokens = promptTokensOf(ctx);
  const model = ctx.route.entry.name;
  return (events) => {
    const running = gate.estimate(units, model, promptTokens, Math.max(0, events - 1));
    const over = gate.budgets.overrun(budget, running, Date.now());
    return over ? new LlmgwError('LLMGW_BUDGET_EXCEEDED', `the ${over.period}ly budget of ${over.level.scope} ${over.level.id} (${over.budget} units) ran out during this response`) : null;
  };
}

/**
 * A stream that did not end normally is charged for what reached the client, a collected
 * answer stopped mid-way for what the engine had sent: the engine's own usage report
 * where it came, else one completion token per event sent after the first (vLLM and
 * SGLang send a role-only event, then about one token per event) and a prompt estimated
 * at four characters a token — marked as estimated.
 */
function charge(ctx: RequestContext, relayed: Relayed | null): void {
  if (!relayed) return;
  const { record } = ctx;
  if (relayed.usage) {
    record.promptTokens = relayed.usage.promptTokens;
    record.completionTokens = relayed.usage.completionTokens;
    record.cachedTokens = relayed.usage.cachedTokens;
    return;
  }
  record.completionTokens = Math.max(0, relayed.events - 1);
  record.promptTokens = promptTokensOf(ctx);
  record.usageEstimated = true;
}
