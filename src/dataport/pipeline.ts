// The request path as a short list of named stages with one contract, in the manner
// of koa's middleware or undici's interceptors: a stage does its part and calls `next`
// to hand the request on, or answers the request and returns without calling it. A
// stage that holds something for the rest of the request (admission's permit, the
// usage record) releases it in a `finally` around `next`, so no ending can skip it.

import type { RequestContext } from './request-context.js';

export interface Stage {
  readonly name: string;
  run(ctx: RequestContext, next: () => Promise<void>): Promise<void>;
}

/** Runs `stages` in order for each request. */
export function compose(stages: readonly Stage[]): (ctx: RequestContext) => Promise<void> {
  const done = Promise.resolve();
  const at = (i: number, ctx: RequestContext): Promise<void> => (i === stages.length ? done : stages[i]!.run(ctx, () => at(i + 1, ctx)));
  return (ctx) => at(0, ctx);
}
