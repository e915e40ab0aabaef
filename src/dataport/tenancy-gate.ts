import type { TenancyConfig, UnitsConfig } from '../config/types.js';
import { createLogger } from '../log.js';
import type { UsageRecord } from '../messages/accounting.js';
import type { BilledRecord } from '../messages/tenancy.js';
import type { EndpointTable } from '../router/endpoint-table.js';
import { Budgets } from '../tenancy/budgets.js';
import type { Directory } from '../tenancy/directory.js';
import type { JournalAppender } from '../tenancy/journal-appender.js';
import { LevelStates } from '../tenancy/level-counters.js';
import { RateLimiter } from '../tenancy/rate-limiter.js';
import { estimateOf, GpuSecondRates, priceOf, type Served } from '../tenancy/units.js';
import type { RequestContext } from './request-context.js';

const log = createLogger('dataport');

/** What the data port needs to run with tenancy on (`DataPortOptions.tenancy`). */
export interface DataPortTenancy {
  /** Built from the store's snapshot; the admin port applies each change to this same object. */
  directory: Directory;
  /** Opened on the store's journal folder (`journalDirOf(store)`). */
  journal: JournalAppender;
  settings: TenancyConfig;
  /** How each canonical model is priced (`models[].units`); a model not listed is priced in tokens. */
  units: ReadonlyMap<string, UnitsConfig>;
}

/**
 * Tenancy's state on the main thread for the request path: the rate limiter and the
 * budget counters (restored from the snapshot's spend), and the one place a request is
 * billed: its limits settled with what it really used, its record appended to the
 * journal, exactly once.
 */
export class TenancyGate {
  readonly directory: Directory;
  readonly journal: JournalAppender;
  readonly settings: TenancyConfig;
  readonly limiter: RateLimiter;
  readonly budgets: Budgets;
  private readonly units: ReadonlyMap<string, UnitsConfig>;
  private readonly gpuRates = new GpuSecondRates();

  constructor(
    t: DataPortTenancy,
    private readonly table: EndpointTable,
  ) {
    this.directory = t.directory;
    this.journal = t.journal;
    this.settings = t.settings;
    this.units = t.units;
    const states = new LevelStates();
    this.limiter = new RateLimiter(states);
    this.budgets = new Budgets(states, t.directory.spend, (id) => t.directory.chainOf(id));
  }

  unitsOf(model: string): UnitsConfig {
    return this.units.get(model) ?? 'tokens';
  }

  /** What a request to `model`, priced in `units` (null: free), reserves before it runs, or has cost so far. */
  estimate(units: UnitsConfig | null, model: string, promptTokens: number, completionTokens: number): number {
    return units === null ? 0 : estimateOf(units, promptTokens, completionTokens, units === 'gpu_seconds' ? this.gpuRates.of(model) : 0);
  }

  /**
   * Bills the request once: settles its holds with its record's usage and appends the
   * record. `live`: called while the request still holds its endpoint (just before the
   * last byte), so the endpoint's in-flight count includes it.
   */
  bill(ctx: RequestContext, live: boolean): void {
    if (ctx.billed) return;
    ctx.billed = true;
    const { record } = ctx;
    record.durationMs = performance.now() - ctx.arrived;
    const t = ctx.tenant;
    let units = 0;
    if (t) {
      if (t.units !== null) units = priceOf(t.units, record, this.servedOf(record.endpoint, record.durationMs, live));
      if (t.units === 'gpu_seconds' && record.modelServed !== null && record.endpoint !== null) this.gpuRates.observe(record.modelServed, units, record.promptTokens + record.completionTokens);
      const now = Date.now();
      if (t.rate) this.limiter.settle(t.rate, record.promptTokens + record.completionTokens, now);
      // A request that never reached an engine cost nothing: its reservation is just returned.
      if (t.budget && record.endpoint === null) this.budgets.release(t.budget);
      else if (t.budget) this.budgets.settle(t.budget, units, now);
    }
    const v = t?.view;
    const line = billedRecord(record, v?.key.id ?? null, v?.project.id ?? null, v?.team.id ?? null, v?.org.id ?? null, units);
    if (!this.journal.append(line)) log.error('usage journal write failed: refusing requests until it works again', { request: record.id, error: this.journal.reason });
  }

  private servedOf(endpoint: string | null, durationMs: number, live: boolean): Served | null {
    const e = endpoint === null ? undefined : this.table.get(endpoint);
    if (!e) return null;
    // Once the request let go of its endpoint, it is no longer in the count it shared.
    return { gpus: e.gpus, durationMs, concurrent: e.inflight + (live ? 0 : 1) };
  }
}

/**
 * The journal's line for a record, written out field by field: an object spread of the
 * record with the billing fields added is an object V8 builds and serialises slowly
 * (~20 µs a request on the main thread with its JSON, against ~4 µs for this shape).
 */
function billedRecord(r: UsageRecord, keyId: string | null, projectId: string | null, teamId: string | null, orgId: string | null, units: number): BilledRecord {
  return {
    id: r.id,
    at: r.at,
    path: r.path,
    modelAsked: r.modelAsked,
    modelServed: r.modelServed,
    fallback: r.fallback,
    endpoint: r.endpoint,
    status: r.status,
    error: r.error,
    stream: r.stream,
    promptTokens: r.promptTokens,
    completionTokens: r.completionTokens,
    cachedTokens: r.cachedTokens,
    usageEstimated: r.usageEstimated,
    ttftMs: r.ttftMs,
    durationMs: r.durationMs,
    queueMs: r.queueMs,
    band: r.band,
    attempts: r.attempts,
    scheduleMicros: r.scheduleMicros,
    profile: r.profile,
    keyId,
    projectId,
    teamId,
    orgId,
    units,
  };
}
