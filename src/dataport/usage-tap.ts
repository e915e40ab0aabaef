// Reading the engine's `usage` out of a response on its way to the client, without
// holding the response back. Streams are cut at SSE event boundaries ("\n\n") so a
// usage chunk split across TCP reads is still seen whole; a usage-only chunk the client
// did not ask for is dropped here (the router always asks the engine for usage, so that
// accounting does not depend on client behaviour).

export interface Usage {
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
}

/** Where the body goes: the first chunk may only be written after the response head. */
export interface UsageTap {
  /** What to send on for this chunk of the engine's body (possibly nothing yet). */
  push(chunk: Buffer): Buffer | string;
  /** What is left to send when the engine's body ends. */
  end(): Buffer | string;
  readonly usage: Usage | null;
}

const EMPTY = Buffer.alloc(0);
const EVENT_END = Buffer.from('\n\n');
// A usage object, as compact (pydantic) or spaced (json.dumps) JSON writes it; the
// `"usage":null` of ordinary chunks matches neither.
const USAGE_COMPACT = Buffer.from('"usage":{');
const USAGE_SPACED = Buffer.from('"usage": {');
const USAGE_OBJECT = /"usage"\s*:\s*\{/;

export function readUsage(u: unknown): Usage | null {
  if (typeof u !== 'object' || u === null) return null;
  const o = u as { prompt_tokens?: unknown; completion_tokens?: unknown; prompt_tokens_details?: { cached_tokens?: unknown } | null };
  const n = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : 0);
  return { promptTokens: n(o.prompt_tokens), completionTokens: n(o.completion_tokens), cachedTokens: n(o.prompt_tokens_details?.cached_tokens) };
}

function hasUsage(buf: Buffer): boolean {
  return buf.indexOf(USAGE_COMPACT) !== -1 || buf.indexOf(USAGE_SPACED) !== -1;
}

/**
 * Server-sent events (`stream: true`). Bytes pass through as they came, cut only at
 * event boundaries; only an event that carries a usage object is decoded, so an
 * ordinary token chunk costs two byte searches, not a string round trip.
 */
export class SseUsageTap implements UsageTap {
  private carry: Buffer | null = null;
  usage: Usage | null = null;
  /** Events sent on so far: what a client that left mid-stream is charged by. */
  events = 0;

  /** @param strip drop the usage-only chunk: the client did not ask for it. */
  constructor(private readonly strip: boolean) {}

  push(chunk: Buffer): Buffer | string {
    const buf = this.carry === null ? chunk : Buffer.concat([this.carry, chunk]);
    const cut = buf.lastIndexOf(EVENT_END);
    if (cut === -1) {
      this.carry = buf;
      return EMPTY;
    }
    const end = cut + 2;
    this.carry = end === buf.length ? null : buf.subarray(end);
    const complete = end === buf.length ? buf : buf.subarray(0, end);
    if (!hasUsage(complete)) {
      this.count(complete);
      return complete;
    }
    return this.scan(complete.toString('utf8'));
  }

  end(): Buffer | string {
    const rest = this.carry;
    this.carry = null;
    if (rest === null) return EMPTY;
    return hasUsage(rest) ? this.scan(rest.toString('utf8')) : (this.count(rest), rest);
  }

  private count(events: Buffer): void {
    for (let at = events.indexOf(EVENT_END); at !== -1; at = events.indexOf(EVENT_END, at + 2)) this.events++;
  }

  /** Looks at each event that may carry usage; returns the events to send on. */
  private scan(events: string): string {
    let out = '';
    for (const event of events.split('\n\n')) {
      if (event === '') continue;
      if (USAGE_OBJECT.test(event) && this.take(event)) continue;
      out += event + '\n\n';
      this.events++;
    }
    return out;
  }

  /** Records the event's usage; true when the event is usage-only and must be dropped. */
  private take(event: string): boolean {
    let data = '';
    for (const line of event.split('\n')) if (line.startsWith('data:')) data += line.slice(line.charCodeAt(5) === 32 ? 6 : 5);
    try {
      const chunk = JSON.parse(data) as { usage?: unknown; choices?: unknown };
      const usage = readUsage(chunk.usage);
      if (usage) this.usage = usage;
      return this.strip && usage !== null && Array.isArray(chunk.choices) && chunk.choices.length === 0;
    } catch {
      return false; // not JSON: pass it on untouched
    }
  }
}

/**
 * A JSON body (`stream: false`): passed through as it comes. Engines write `usage` near
 * the end, so only the last TAIL_BYTES are kept, and only the usage object is parsed
 * at the end — not the whole body (an embeddings answer can be megabytes).
 */
export class JsonUsageTap implements UsageTap {
  private static readonly TAIL_BYTES = 16 * 1024;
  private tail: Buffer[] = [];
  private tailSize = 0;
  private parsed: Usage | null | undefined;

  push(chunk: Buffer): Buffer {
    this.tail.push(chunk);
    this.tailSize += chunk.length;
    while (this.tail.length > 1 && this.tailSize - this.tail[0]!.length >= JsonUsageTap.TAIL_BYTES) this.tailSize -= this.tail.shift()!.length;
    return chunk;
  }

  end(): string {
    return '';
  }

  get usage(): Usage | null {
    if (this.parsed !== undefined) return this.parsed;
    const text = Buffer.concat(this.tail, this.tailSize).toString('utf8');
    this.tail = [];
    return (this.parsed = usageIn(text));
  }
}

/** The last `"usage": {…}` object in `text`, parsed alone; null when there is none or it is not JSON. */
export function usageIn(text: string): Usage | null {
  const key = text.lastIndexOf('"usage"');
  if (key === -1) return null;
  const open = text.indexOf('{', key);
  if (open === -1 || !/^"usage"\s*:\s*$/.test(text.slice(key, open))) return null;
  // The usage object holds only numbers and small objects of numbers: no strings, so
  // braces can be counted without a tokenizer.
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 123) depth++;
    else if (c === 125 && --depth === 0) {
      try {
        return readUsage(JSON.parse(text.slice(open, i + 1)));
      } catch {
        return null;
      }
    }
  }
  return null;
}
