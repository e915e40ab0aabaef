import type { EngineLoad } from '../messages/endpoints.js';
import type { EndpointState } from './endpoint-table.js';

/**
 * What a replica's engine holds now, estimated from its last scrape plus what the router
 * did since. A scrape is up to a poll interval old: a flood sends hundreds of requests in
 * that time, and a wave of completions (requests started together end together) empties
 * an engine as fast. Both the scheduler and admission must see that, or they keep
 * sending to the engine that looked idle a moment ago.
 *
 * Read only where `e.load` is fresh.
 *
 * An engine counts a request only once it has parsed it and run a scheduler step, so a
 * scrape may miss requests the router had already sent; every estimate leans one way.
 * `busy` holds that the engine held at least what the router had in flight to it when
 * scraped: right for deciding whether to add low-priority work, where too much floods
 * an engine. `idle` trusts the scrape: right for whether an interactive request may go,
 * where a request counted twice holds it back beside a free slot.
 */
export type Lean = 'busy' | 'idle';

/** Requests sent minus requests finished since the scrape: negative when more finished. */
function sinceScrape(e: EndpointState): number {
  return e.inflight - e.inflightAtLoad;
}

/**
 * Requests the engine's KV cache holds at the mean footprint of those it ran when
 * scraped (Infinity where that is not known). Long prompts fill the cache well before
 * max_num_seqs: an engine of 64 slots fed 1,400–1,900-token prompts ran 24–28, and a
 * first-band request counted against 64 waited behind 30 more inside it. Read off one
 * scrape, whose running count and KV usage are of the same step, so it follows the
 * workload both ways.
 */
export function kvSlots(load: EngineLoad | null): number {
  if (load === null || load.kvUsage === null || load.kvUsage <= 0 || load.running === 0) return Infinity;
  return Math.max(1, Math.floor(load.running / load.kvUsage));
}

/**
 * The batch slots `e` has: its batch capacity (configured, published or learnt), else
 * `unknown`, and fewer where its KV cache binds first (`kvSlots`); null when neither
 * capacity is known.
 */
export function batchSlots(e: Pick<EndpointState, 'batchCapacity' | 'load'>, unknown: number | null = null): number | null {
  const capacity = e.batchCapacity ?? unknown;
  return capacity === null ? null : Math.min(capacity, kvSlots(e.load));
}

/** Requests in the engine now, running or waiting. */
export function occupancy(e: EndpointState, lean: Lean): number {
  const load = e.load!;
  const scraped = load.running + load.waiting;
  return (lean === 'busy' ? Math.max(scraped, e.inflightAtLoad) : scraped) + sinceScrape(e);
}

/**
 * Requests beyond the engine's batch now: positive, that many wait inside it; negative,
 * that many batch slots are free. Once the engine has been seen queueing its batch
 * capacity is known and every request sent or finished counts at once. Before that free
 * slots cannot be counted (the result is never negative), and what was sent counts only
 * where the engine already queues or its KV cache is full: an engine with free slots
 * runs new requests at once.
 */
export function backlog(e: EndpointState, kvCeiling: number, lean: Lean = 'busy'): number {
  const load = e.load!;
  const slots = batchSlots(e);
  if (slots !== null) return occupancy(e, lean) - slots;
  // A queueing engine runs all it can: each request sent joins the queue, each one finished lets one in.
  if (queueing(e, kvCeiling)) return Math.max(0, occupancy(e, lean) - load.running);
  return 0;
}

/**
 * `backlog` as admission reads it: on an engine of unknown size that was not queueing
 * when scraped, it is taken to run twice the most it was seen running (a slow start's
 * guess), and what the router sent beyond that since counts as waiting. A flood sent
 * within one poll interval must not read as an idle engine until the next scrape, or an
 * interactive request goes into an engine already full. The scheduler ranks replicas by
 * `backlog`, where a guess would only blur the ranking.
 */
export function admissionBacklog(e: EndpointState, kvCeiling: number, lean: Lean): number {
  if (e.batchCapacity !== null || queueing(e, kvCeiling)) return backlog(e, kvCeiling, lean);
  return Math.max(0, occupancy(e, lean) - 2 * Math.max(1, e.load!.running, e.peakRunning));
}

/**
 * Whether a scrape now could say something the router's own count does not: the last one
 * showed the engine queueing (or its KV cache at the ceiling), running more than the
 * router had sent it (other clients share it), or the router now holds more than half its
 * batch — beyond the most it was ever seen running, where the batch is unknown. An engine
 * running only the router's requests, well inside its batch, is what the router's count
 * says it is: scraping it again between polls costs the engine and the telemetry thread
 * a /metrics each and changes no decision.
 */
export function scrapeCouldTell(e: EndpointState, kvCeiling: number): boolean {
  const load = e.load;
  if (load === null || queueing(e, kvCeiling) || load.running > e.inflightAtLoad) return true;
  const slots = batchSlots(e);
  const roomy = slots !== null ? slots / 2 : Math.max(1, e.peakRunning);
  return e.inflight > roomy;
}

/** Whether `e`'s last scrape showed requests waiting or its KV cache at `kvCeiling`. */
export function queueing(e: EndpointState, kvCeiling: number): boolean {
  const load = e.load!;
  return load.waiting > 0 || (load.kvUsage ?? 0) >= kvCeiling;
}

/** Requests waiting inside the engine now (see `backlog`). */
export function waitingNow(e: EndpointState, kvCeiling: number): number {
  return Math.max(0, backlog(e, kvCeiling));
}

/**
 * Whether lower bands keep off `e` now: a first-band request sent there within `gateMs`
 * has had no first chunk from the engine yet. A lower-band prompt reaching the engine
 * before the step that prefills the first band's joins that step and lengthens it, and
 * the router's sends reach the engine in order, so one sent `gateMs` later comes a step
 * after. An oracle router reacting 1–2 ms late met the admission budgets in `vllm long`
 * only so, with one long prompt prefilling at a time (`npm run bench -- admission-bound`,
 * its latency sweep). Bounded by `gateMs`, as a first band whose first tokens come slowly
 * (a host under load, an engine with no free slot) would otherwise keep the gate shut
 * for good: unbounded, with interactive requests arriving faster than their first tokens
 * came back, `batch 256 varied` bronze fell to 0.52–0.64 of off (admission bench).
 */
export function firstBandPrefilling(e: Pick<EndpointState, 'topPrefilling' | 'topSentAt'>, now: number, gateMs: number): boolean {
  return e.topPrefilling > 0 && now - e.topSentAt < gateMs;
}
