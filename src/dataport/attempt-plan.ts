import { LlmgwError } from '../errors.js';
import { createLogger } from '../log.js';
import type { UsageRecord } from '../messages/accounting.js';
import type { EndpointState, EndpointTable, Lease, LeaseRole } from '../router/endpoint-table.js';
import type { RetryBudget } from '../router/retry-budget.js';
import type { PrefixIndex } from '../router/scheduler/prefix-index.js';
import type { Scheduler } from '../router/scheduler/scheduler.js';
import type { Profile, RouteRequest } from '../router/scheduler/types.js';
import type { ModelRoute } from './model-routes.js';

const log = createLogger('dataport');

export interface PlanDeps {
  table: EndpointTable;
  scheduler: Scheduler;
  prefixIndex: PrefixIndex;
  budget: RetryBudget;
  maxAttempts: number;
}

/** A failure whose verdict on the endpoint waits until we know whether the request fails elsewhere too. */
interface Suspect {
  lease: Lease;
  way: string;
}

/**
 * Which endpoints one request tries, in which order, and when it stops: each attempt
 * goes to the scheduler's pick among the endpoints not yet tried, first of the model,
 * then of its fallbacks in order, up to `maxAttempts`; a retry needs a slot of the
 * retry budget, held until its answer begins.
 *
 * Poison containment: a request that kills or breaks the engine it reaches (a "query of
 * death") would otherwise be retried into every engine of the model and its fallbacks.
 * A failure that may be the request's doing (see `Outcome.suspect`) is held without a
 * verdict; when the same request fails the same way on a second endpoint, it is tried
 * nowhere else, and neither failure counts against those endpoints' health (their
 * pollers still see an engine that died). If it succeeds elsewhere instead, or fails
 * another way, the held failures count after all.
 */
export class AttemptPlan {
  private readonly tried: EndpointState[] = [];
  private readonly suspects: Suspect[] = [];
  private model = 0;
  private retrying = false;
  private stop: LlmgwError | null = null;
  private last: LlmgwError | null = null;

  constructor(
    private readonly deps: PlanDeps,
    private readonly route: ModelRoute,
    private readonly profile: Profile,
    private readonly prefix: Float64Array | null,
    private readonly session: string | null,
    private readonly record: UsageRecord,
    /**
     * What the request is to admission. Of the first band, it goes where it finds the most
     * room, and lower-band requests it would wait behind there are recalled; recallable,
     * it may be one of those.
     */
    private role: LeaseRole = 'plain',
    /** The prompt tokens admission paces the request by (0: not paced). */
    private readonly prefillTokens = 0,
    /**
     * Whether the scheduler may move it for them (`keepLeastPrefilling`): not where an
     * engine is taken to hold its head, as elsewhere all of it would be prefilled.
     */
    private readonly spreadPrefill = true,
  ) {
    deps.budget.entered();
  }

  /** The model the current attempt serves. */
  get servedModel(): string {
    return this.route.chain[this.model]!;
  }

  /** A lease on the next endpoint to try, or null when there is none (see `error`). */
  next(now: number): Lease | null {
    const { deps, record } = this;
    if (this.stop || this.tried.length >= deps.maxAttempts) return null;
    const chain = this.route.chain;
    for (; this.model < chain.length; this.model++) {
      const model = chain[this.model]!;
      const t0 = performance.now();
      const ep = deps.scheduler.pick(deps.table.forModel(model), this.request(model, now), this.profile);
      record.scheduleMicros += (performance.now() - t0) * 1000;
      if (!ep) continue; // nothing (left) for this model: its fallback, if any
      if (this.tried.length > 0 && !this.retrying) {
        if (!deps.budget.tryRetry()) {
          const { requests, retries } = deps.budget.inFlight;
          this.stop = new LlmgwError('LLMGW_UPSTREAM_FAILED', `${this.last?.message ?? 'the attempt failed'}; not retried: the retry budget is spent (${retries} retries in flight for ${requests} requests, router.retries.budget_percent)`);
          return null;
        }
        this.retrying = true;
      }
      if (log.enabled('debug')) log.debug('picked', { request: record.id, model, endpoint: ep.id, profile: this.profile.name, scores: deps.scheduler.explain(ep) });
      if (this.prefix) deps.prefixIndex.record(this.prefix, ep.id);
      this.tried.push(ep);
      record.attempts = this.tried.length;
      record.endpoint = ep.id;
      record.modelServed = model;
      record.fallback = this.model > 0;
      // Before its lease counts it: what is beyond the engine's batch is counted without it.
      if (this.role === 'first-band') this.route.admission?.makeWay(ep, now);
      return deps.table.lease(ep, now, this.role, this.prefillTokens);
    }
    return null;
  }

  /**
   * The attempt on `lease` was recalled (`Admission.makeWay`): it is not an attempt that
   * failed, so its endpoint may be picked again and no retry is counted. A request is
   * recalled at most once: sent again, it keeps its place, so that a steady first band
   * cannot starve it, and what recalling wastes is one partial answer per request.
   */
  recalled(lease: Lease): void {
    const at = this.tried.lastIndexOf(lease.endpoint);
    if (at !== -1) this.tried.splice(at, 1);
    this.record.attempts = this.tried.length;
    if (this.tried.length === 0) {
      this.record.endpoint = null;
      this.record.modelServed = null;
    }
    // A retry queued again holds no slot of the retry budget: its next attempt takes one.
    this.endRetry();
    this.role = 'plain';
  }

  /** The attempt on `lease` failed before anything reached the client. */
  failed(lease: Lease, error: LlmgwError, suspect: string | null, now: number): void {
    this.last = error;
    if (suspect === null) return;
    const twin = this.suspects.findIndex((s) => s.way === suspect);
    if (twin === -1) {
      this.suspects.push({ lease, way: suspect });
      return;
    }
    const first = this.suspects.splice(twin, 1)[0]!;
    first.lease.abandoned();
    lease.abandoned();
    log.warn('request failed the same way on two endpoints; not tried on others', { request: this.record.id, endpoints: [first.lease.id, lease.id], way: suspect });
    this.stop = new LlmgwError(
      'LLMGW_REQUEST_POISONED',
      `the request failed the same way (${suspect}) on two endpoints, ${first.lease.id} and ${lease.id}; it is not tried on others, as it may be what breaks them: ${error.message}`,
    );
    this.commit(now);
  }

  /**
   * The answer began on some endpoint: the failures held until now were the endpoints'
   * own, and a retry gives its slot back. The budget bounds retries still waiting for an
   * answer — what piles up in a fleet-wide fault — not the streams they became.
   */
  answered(now: number): void {
    this.commit(now);
    this.endRetry();
  }

  /** Why the request got no answer: the last failure, the poison verdict, or no endpoint at all. */
  error(now: number): LlmgwError {
    this.commit(now);
    if (this.stop) return this.stop;
    if (this.last) {
      this.record.modelServed = null;
      return this.last;
    }
    this.record.modelServed = null;
    this.record.endpoint = null;
    const chain = this.route.chain;
    const why = chain
      .flatMap((model) => this.deps.scheduler.rejections(this.deps.table.forModel(model), { model, prefix: null, session: null, tried: this.tried, now }).map((r) => `${r.id}: ${r.reason}`))
      .join('; ');
    const entry = this.route.entry;
    const names = chain.length > 1 ? `'${entry.name}' or its fallbacks (${entry.fallbacks.join(', ')})` : `'${entry.name}'`;
    return new LlmgwError('LLMGW_NO_ENDPOINT', `no endpoint can serve ${names} now${why ? ` (${why})` : ' (no endpoint serves it)'}; retry shortly`);
  }

  /** The request ended: held failures count, the retry slot is given back. */
  done(now: number): void {
    this.commit(now);
    this.endRetry();
    this.deps.budget.left();
  }

  private endRetry(): void {
    if (this.retrying) this.deps.budget.retryEnded();
    this.retrying = false;
  }

  private commit(now: number): void {
    for (const s of this.suspects) s.lease.failed(now);
    this.suspects.length = 0;
  }

  private request(model: string, now: number): RouteRequest {
    // Admission's adaptive limit is the entry model's; a fallback's engines of unknown size are not compared.
    const room = this.role === 'first-band' ? { unknownCapacity: model === this.route.chain[0] ? (this.route.admission?.adaptiveLimit ?? null) : null } : null;
    const lower = this.role === 'streamed-lower' || this.role === 'collected-lower';
    const firstBandGateMs = lower ? (this.route.admission?.firstBandGateMs ?? null) : null;
    const spread = lower && this.spreadPrefill && (this.route.admission?.firstBandActive(now) ?? false);
    const prefillTokens = spread ? this.prefillTokens : 0;
    return { model, prefix: this.prefix, session: this.session, tried: this.tried, now, room, firstBandGateMs, prefillTokens };
  }
}
