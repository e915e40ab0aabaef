// The access log: one JSON line per inference request, built from the usage record the
// data port leaves anyway. Lines are written once per event-loop turn, joined, so a busy
// turn pays one write to stderr (a syscall: stderr is synchronous on Linux) instead of
// one per request.
import { formatLogLine } from '../log.js';
import type { UsageRecord } from '../messages/accounting.js';

/** The fields of one access line, in the logs' camelCase. */
export function accessFields(r: UsageRecord): Record<string, unknown> {
  return {
    // Usage records exist only for the inference routes, which take POST alone.
    method: 'POST',
    path: r.path,
    status: r.status,
    model: r.modelAsked,
    served: r.modelServed,
    endpoint: r.endpoint,
    durationMs: Math.round(r.durationMs * 1000) / 1000,
    ttftMs: r.ttftMs === null ? null : Math.round(r.ttftMs * 1000) / 1000,
    // Time held in the admission queue, part of ttftMs: a slow first token with none
    // queued here waited in the engine.
    queueMs: Math.round(r.queueMs * 1000) / 1000,
    ...(r.band === null ? {} : { band: r.band }),
    request: r.id,
    ...(r.error === null ? {} : { error: r.error }),
  };
}

/**
 * Collects the records of a turn and formats them after it, in one write: the request
 * that ended pays a push, not the JSON. `flush()` writes what is pending now.
 */
export class AccessLog {
  private pending: UsageRecord[] = [];

  constructor(private readonly write: (text: string) => void = (text) => void process.stderr.write(text)) {}

  readonly add = (record: UsageRecord): void => {
    if (this.pending.push(record) === 1) setImmediate(this.flush);
  };

  readonly flush = (): void => {
    if (this.pending.length === 0) return;
    let text = '';
    // The line's time is when the request ended, not when the batch is written.
    for (const r of this.pending) text += formatLogLine('info', 'access', 'request', accessFields(r), r.at + r.durationMs) + '\n';
    this.pending = [];
    this.write(text);
  };
}
