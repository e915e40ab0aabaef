// Reading the engine's `usage` out of a response on its way to the client, without
// holding the response back. Streams are cut at SSE event boundaries ("\n\n") so a
// usage chunk split across TCP reads is still seen whole; a usage-only chunk the client
// did not ask for is dropped here (the router always asks the engine for usage, so that
// accounting does not depend on client behaviour).

import { StringDecoder } from 'node:string_decoder';

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

const USAGE_OBJECT = /"usage"\s*:\s*\{/;

export function readUsage(u: unknown): Usage | null {
  if (typeof u !== 'object' || u === null) return null;
  const o = u as { prompt_tokens?: unknown; completion_tokens?: unknown; prompt_tokens_details?: { cached_tokens?: unknown } | null };
  const n = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
  return { promptTokens: n(o.prompt_tokens), completionTokens: n(o.completion_tokens), cachedTokens: n(o.prompt_tokens_details?.cached_tokens) };
}

/** Server-sent events (`stream: true`). */
export class SseUsageTap implements UsageTap {
  private carry = '';
  private readonly decoder = new StringDecoder('utf8');
  usage: Usage | null = null;

  /** @param strip drop the usage-only chunk: the client did not ask for it. */
  constructor(private readonly strip: boolean) {}

  push(chunk: Buffer): string {
    const text = this.carry + this.decoder.write(chunk);
    const cut = text.lastIndexOf('\n\n');
    if (cut === -1) {
      this.carry = text;
      return '';
    }
    this.carry = text.slice(cut + 2);
    const complete = text.slice(0, cut + 2);
    return complete.indexOf('"usage"') === -1 ? complete : this.scan(complete);
  }

  end(): string {
    const rest = this.carry + this.decoder.end();
    this.carry = '';
    return rest === '' ? '' : this.scan(rest);
  }

  /** Looks at each event that may carry usage; returns the events to send on. */
  private scan(events: string): string {
    let out = '';
    for (const event of events.split('\n\n')) {
      if (event === '') continue;
      if (USAGE_OBJECT.test(event) && this.take(event)) continue;
      out += event + '\n\n';
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

/** A JSON body (`stream: false`): passed through as it comes, parsed once it is complete. */
export class JsonUsageTap implements UsageTap {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  private parsed: Usage | null | undefined;

  /** Bodies above this are passed on without looking for usage (embeddings of huge batches). */
  constructor(private readonly limit = 8 * 1024 * 1024) {}

  push(chunk: Buffer): Buffer {
    this.size += chunk.length;
    if (this.size <= this.limit) this.chunks.push(chunk);
    return chunk;
  }

  end(): string {
    return '';
  }

  get usage(): Usage | null {
    if (this.parsed !== undefined) return this.parsed;
    if (this.size > this.limit) return (this.parsed = null);
    try {
      return (this.parsed = readUsage((JSON.parse(Buffer.concat(this.chunks).toString('utf8')) as { usage?: unknown }).usage));
    } catch {
      return (this.parsed = null);
    }
  }
}
