// Reading an engine's own settings where it publishes them: SGLang's `/server_info`
// (`/get_server_info` before 0.5) lists its server arguments, so its batch size, its
// per-step prefill budget and its priority policy need not be configured or learnt.
// vLLM publishes none of these by default (its `/server_info` needs dev mode).
//
// The top level holds the arguments as given; `internal_states` what the schedulers
// resolved at start (a batch size the engine sized from its KV cache is only there).
// Those are preferred.

import type { EngineSettings } from '../../messages/endpoints.js';

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const whole = (v: unknown): number | null => (Number.isSafeInteger(v) ? (v as number) : null);

/** The settings in a `/server_info` body; each null where the body does not say. */
export function parseSglangServerInfo(body: unknown): EngineSettings {
  if (!isObj(body)) return { batchSize: null, stepBudget: null, enginePriority: null };
  const states = Array.isArray(body['internal_states']) ? body['internal_states'].filter(isObj) : [];
  // One scheduler's view: its own resolved value, else the argument as given.
  const first = (key: string): unknown => states[0]?.[key] ?? body[key];
  return { batchSize: batchSize(body, states), stepBudget: stepBudget(first('chunked_prefill_size')), enginePriority: enginePriority(first) };
}

/**
 * Requests the engine runs at once. Under data parallelism each scheduler runs its own
 * batch and the gauges the router reads are summed over them, so the batch is their sum.
 * Recent releases give each scheduler's resolved size as
 * `effective_max_running_requests_per_dp`; without it and with more than one scheduler,
 * how the argument was split is not known, and the size is left to learning.
 */
function batchSize(body: Obj, states: readonly Obj[]): number | null {
  const dp = whole(body['dp_size']) ?? 1;
  const positive = (v: unknown): number | null => {
    const n = whole(v);
    return n !== null && n > 0 ? n : null;
  };
  const perDp = positive(states[0]?.['effective_max_running_requests_per_dp']);
  if (perDp !== null) return perDp * Math.max(1, dp);
  if (dp > 1) return null;
  return positive(states[0]?.['max_running_requests']) ?? positive(body['max_running_requests']);
}

/** SGLang's chunk size: the most prompt tokens one step prefills; -1 turns chunking off. */
function stepBudget(v: unknown): number | null {
  const n = whole(v);
  if (n === null) return null;
  return n > 0 ? n : 0;
}

/** SGLang serves higher `priority` values first unless told to serve lower ones first. */
function enginePriority(first: (key: string) => unknown): EngineSettings['enginePriority'] {
  if (first('enable_priority_scheduling') !== true) return null;
  return first('schedule_low_priority_values_first') === true ? 'lower-first' : 'higher-first';
}
