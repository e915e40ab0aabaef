import { address, type Ask } from '../runtime/protocol.js';

/**
 * One request as it ended, whatever the ending. Tenancy bills from these and the admin
 * port's request metrics are built from them, so every request produces exactly one,
 * including those refused before reaching an engine.
 */
export interface UsageRecord {
  /** x-request-id, the client's or ours. */
  id: string;
  /** Wall-clock ms when the request arrived. */
  at: number;
  /** `/v1/chat/completions`, `/v1/completions`, `/v1/embeddings`. */
  path: string;
  /** The model the client asked for, as sent (an alias stays an alias). */
  modelAsked: string;
  /** The canonical model that served it: differs from the asked one's after a fallback; null if none did. */
  modelServed: string | null;
  /** Whether a fallback model served it because the asked one had no usable endpoint. */
  fallback: boolean;
  /** The endpoint that answered last, or null when none was tried. */
  endpoint: string | null;
  /** The HTTP status the client saw; 499 when the client went away first. */
  status: number;
  /** Stable error code when the request failed (LLMGW_UPSTREAM_TIMEOUT …). */
  error: string | null;
  stream: boolean;
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
  /**
   * True when the tokens are llmgw's estimate, not the engine's report: a stream that
   * ended before the engine's usage chunk (the client left, the engine broke) is charged
   * for the events it was sent.
   */
  usageEstimated: boolean;
  /** Arrival to the first token, ms (see `llmgw_request_ttft_seconds`); null if none came. */
  ttftMs: number | null;
  durationMs: number;
  /** Time spent waiting for admission, ms, over every wait (a recalled request waits again); 0 when it went straight through. */
  queueMs: number;
  /** Admission band, or null when admission is off or the request was refused before it. */
  band: string | null;
  /** Endpoints tried, the successful one included. */
  attempts: number;
  /** Time the scheduler took to pick, summed over attempts, µs. */
  scheduleMicros: number;
  /** The routing profile used. */
  profile: string;
}

export interface UsageTotals {
  requests: number;
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
  byModel: Record<string, { requests: number; promptTokens: number; completionTokens: number; errors: number }>;
}

/** Protocol of the accounting actor: records in, totals and recent records out. */
export type AccountingMsg =
  /**
   * Records of requests that ended in one event-loop turn of the data port. Asked, not
   * told: the sender lives on another thread and must learn of a refusal to send the
   * records again (see UsageBatcher).
   */
  | ({ type: 'records'; records: UsageRecord[] } & Ask<void>)
  | ({ type: 'recent'; limit: number } & Ask<UsageRecord[]>)
  | ({ type: 'totals' } & Ask<UsageTotals>)
  /** A reloaded catalog: every name a client may send → its canonical model (metric labels hold only these). */
  | { type: 'catalog'; models: Record<string, string> };

export const ACCOUNTING = address<AccountingMsg>('accounting');
