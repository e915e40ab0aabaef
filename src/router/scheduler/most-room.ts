import type { EndpointState } from '../endpoint-table.js';
import { batchSlots, firstBandPrefilling } from '../load-estimate.js';
import type { RoomQuery } from './types.js';

/**
 * Free batch slots on `e` by the router's own in-flight count, which is always current,
 * against its batch slots (its capacity, configured or learnt, else `unknownCapacity`,
 * and fewer where its KV cache holds fewer); null when neither is known. Negative: that many of ours wait inside the engine.
 */
export function freeSlots(e: EndpointState, unknownCapacity: number | null): number | null {
  const slots = batchSlots(e, unknownCapacity);
  return slots === null ? null : slots - e.inflight;
}

/**
 * Keeps, in place, only the candidates with the most free slots, so that a first-band
 * request goes where it waits least: into a free slot of the next step, not behind a
 * full batch. A scrape is up to a poll interval old and a flood fills an engine within
 * one, so the scraped queue cannot tell. The scorers then rank those left (prefix
 * affinity among replicas of equal room). Leaves them all when some capacity is unknown:
 * room cannot be compared then.
 */
export function keepMostRoom(candidates: EndpointState[], room: RoomQuery): void {
  let most = -Infinity;
  for (const e of candidates) {
    const free = freeSlots(e, room.unknownCapacity);
    if (free === null) return;
    if (free > most) most = free;
  }
  let kept = 0;
  for (const e of candidates) if (freeSlots(e, room.unknownCapacity) === most) candidates[kept++] = e;
  candidates.length = kept;
}

/**
 * Keeps, in place, only the candidates where no first-band prompt is being prefilled
 * (`firstBandPrefilling`), unless that would leave none: admission counts only those as
 * room for the lower bands.
 */
export function keepClearOfFirstBand(candidates: EndpointState[], now: number, gateMs: number): void {
  let kept = 0;
  for (const e of candidates) if (!firstBandPrefilling(e, now, gateMs)) candidates[kept++] = e;
  if (kept > 0) candidates.length = kept;
}

/**
 * Keeps, in place, only the candidates with the fewest lower-band prompt tokens awaiting
 * a first token (`EndpointState.lowerPrefilling`). Admission paces those prompts per
 * model, against the sum of its replicas' budgets; sent to one replica, two of them
 * would share its next step, and a first-band prompt arriving there waits for both.
 */
export function keepLeastPrefilling(candidates: EndpointState[]): void {
  let least = Infinity;
  for (const e of candidates) if (e.lowerPrefilling < least) least = e.lowerPrefilling;
  let kept = 0;
  for (const e of candidates) if (e.lowerPrefilling === least) candidates[kept++] = e;
  candidates.length = kept;
}
