// A client's non-streamed answer, built from the engine's stream. The engine is asked to
// stream even when the client did not: a JSON answer's first byte is its last, so the
// first-token timeout would bound the whole generation (a 2,000-token answer at 30 ms a
// token is past the 60 s default), the idle timeout could not see an engine stall
// mid-way, and admission could not see when a batch job's prompt was prefilled. The
// chunks are merged here into the body the engine would have sent: the same id,
// `created`, model, choices and usage.

import { StringDecoder } from 'node:string_decoder';
import { readUsage, type Usage } from './usage-tap.js';

const EVENT_END = '\n\n';
const DONE = '[DONE]';
/**
 * The most of an engine's stream collected for one answer. A stream the client reads is
 * bounded by its reading; one collected here is held whole, so an engine that streams
 * without end must not be able to take the gateway's memory with it. About 200 bytes of
 * stream a token: over a million tokens of answer.
 */
export const MAX_COLLECTED_BYTES = 256 * 1024 * 1024;
/** The longest one event may be: an engine's event carries a token or a few, and an unended one is rescanned with each read. */
const MAX_EVENT_BYTES = 1024 * 1024;

/** An error the engine sent as a stream event (`data: {"error": …}`), as a status and body. */
export interface StreamError {
  status: number;
  body: string;
  /** Whether any of the answer (text, a finish) had come before it. */
  midway: boolean;
}

interface Choice {
  index: number;
  /** Chat: the message built from the deltas. */
  message: Record<string, unknown> | null;
  /** Completions: the text so far. */
  text: string | null;
  /** finish_reason, stop_reason and whatever else the engine puts on a choice: the last value seen. */
  rest: Record<string, unknown>;
}

/**
 * Request fields whose streamed answer differs from the non-streamed one, or that vLLM
 * does not stream: logprobs of prompt or output, `best_of` and beam search, `echo`,
 * per-chunk token ids, disaggregated prefill's `kv_transfer_params` (carried only in an
 * answer sent whole), and tools, whose streaming parsers are the engine's own and not
 * always equal to its non-streaming ones; `stream_options`, which engines refuse when
 * not streaming.
 */
const NOT_STREAMED = ['stream_options', 'best_of', 'use_beam_search', 'logprobs', 'top_logprobs', 'prompt_logprobs', 'return_token_ids', 'kv_transfer_params', 'tools', 'functions'];

/** Which non-streamed requests are asked of the engine as a stream: chat and completions without NOT_STREAMED fields. */
export function streamable(path: string, body: Record<string, unknown>): boolean {
  if (path !== '/v1/chat/completions' && path !== '/v1/completions') return false;
  for (const key of NOT_STREAMED) {
    const v = body[key];
    if (v !== undefined && v !== null && v !== false) return false;
  }
  return body.echo !== true;
}

/** Accumulates an OpenAI event stream (chat or completions) into one non-streamed body. */
export class StreamedAnswer {
  private carry = '';
  private bytes = 0;
  /** A character split across two reads is decoded once whole. */
  private readonly decoder = new StringDecoder('utf8');
  private head: Record<string, unknown> | null = null;
  private readonly top: Record<string, unknown> = {};
  private readonly choices = new Map<number, Choice>();
  private chat = false;
  /** `data: [DONE]` arrived: the answer is whole. */
  done = false;
  usage: Usage | null = null;
  private usageRaw: unknown = null;
  /** The engine ended the stream with an error event. */
  error: StreamError | null = null;
  /** An event that is not an OpenAI chunk, or null. */
  malformed: string | null = null;
  /** The stream passed MAX_COLLECTED_BYTES. */
  tooLarge = false;
  /** Some text or a finish reason has come. */
  private begun = false;
  /**
   * Chunks taken so far, the usage-only one included: what a request stopped mid-way is
   * charged by (about one token each after the first, as for a relayed stream).
   */
  events = 0;

  /** @param maxBytes the most of the stream collected (MAX_COLLECTED_BYTES) */
  constructor(private readonly maxBytes = MAX_COLLECTED_BYTES) {}

  /** Takes the next piece of the body; false once nothing more is wanted (done, error, malformed or too large). */
  push(chunk: Buffer): boolean {
    this.bytes += chunk.length;
    if (this.bytes > this.maxBytes) {
      this.tooLarge = true;
      return false;
    }
    const text = this.carry + this.decoder.write(chunk);
    let from = 0;
    for (let at = text.indexOf(EVENT_END); at !== -1; at = text.indexOf(EVENT_END, from)) {
      this.event(text.slice(from, at));
      from = at + 2;
      if (this.settled) {
        this.carry = '';
        return false;
      }
    }
    this.carry = text.slice(from);
    if (this.carry.length > MAX_EVENT_BYTES) {
      this.malformed = `an event of more than ${MAX_EVENT_BYTES} bytes`;
      return false;
    }
    return true;
  }

  /** The body ended: an event not followed by a blank line still counts. */
  end(): void {
    this.carry += this.decoder.end();
    if (!this.settled && this.carry.trim() !== '') this.event(this.carry);
    this.carry = '';
  }

  /**
   * Whether the answer is whole: [DONE] came, or the usage chunk (which vLLM and SGLang
   * send once every choice has finished) with every choice seen finished. A stream cut
   * after its last finish but before its usage is not whole: choices that never started
   * would be missing, and the record would have no usage to bill.
   */
  get complete(): boolean {
    if (this.error || this.malformed || this.tooLarge || this.head === null) return false;
    if (this.done) return true;
    if (this.usage === null || this.choices.size === 0) return false;
    for (const c of this.choices.values()) if (c.rest.finish_reason === undefined || c.rest.finish_reason === null) return false;
    return true;
  }

  private get settled(): boolean {
    return this.done || this.error !== null || this.malformed !== null || this.tooLarge;
  }

  /** The non-streamed body the engine would have sent. */
  json(): string {
    const head = this.head ?? {};
    const choices = [...this.choices.values()].sort((a, b) => a.index - b.index).map((c) => this.choiceBody(c));
    const out: Record<string, unknown> = {
      id: head.id,
      object: this.chat ? 'chat.completion' : 'text_completion',
      created: head.created,
      model: head.model,
      choices,
      usage: this.usageRaw,
    };
    for (const [k, v] of Object.entries(this.top)) if (!(k in out)) out[k] = v;
    return JSON.stringify(out);
  }

  private choiceBody(c: Choice): Record<string, unknown> {
    const out: Record<string, unknown> = { index: c.index };
    if (this.chat) {
      // vLLM's message always has a tool_calls list; none are asked for here.
      const m = c.message ?? { role: 'assistant', content: null };
      out.message = { ...m, tool_calls: m.tool_calls ?? [] };
    } else out.text = c.text ?? '';
    out.logprobs = c.rest.logprobs ?? null;
    out.finish_reason = c.rest.finish_reason ?? null;
    for (const [k, v] of Object.entries(c.rest)) if (!(k in out)) out[k] = v;
    return out;
  }

  private event(raw: string): void {
    // vLLM and SGLang write one `data: ` line per event; anything else is read line by line.
    let data = '';
    if (raw.startsWith('data: ') && raw.indexOf('\n') === -1) data = raw.slice(6);
    else for (const line of raw.split('\n')) if (line.startsWith('data:')) data += line.slice(line.charCodeAt(5) === 32 ? 6 : 5);
    if (data === '') return; // a comment or keep-alive
    if (data === DONE) {
      this.done = true;
      return;
    }
    let chunk: unknown;
    try {
      chunk = JSON.parse(data);
    } catch {
      this.malformed = `an event that is not JSON: ${data.slice(0, 100)}`;
      return;
    }
    if (typeof chunk !== 'object' || chunk === null || Array.isArray(chunk)) {
      this.malformed = `an event that is not an object: ${data.slice(0, 100)}`;
      return;
    }
    const c = chunk as Record<string, unknown>;
    if (c.error !== undefined || c.object === 'error') {
      this.error = { status: errorStatus(c), body: data, midway: this.begun };
      return;
    }
    if (!Array.isArray(c.choices)) {
      this.malformed = `an event without choices: ${data.slice(0, 100)}`;
      return;
    }
    this.events++;
    if (this.head === null) {
      this.head = c;
      this.chat = c.object === 'chat.completion.chunk';
    }
    for (const k in c) {
      if (k === 'choices' || k === 'usage' || k === 'object' || k === 'id' || k === 'created' || k === 'model') continue;
      const v = c[k];
      if (v !== null || !(k in this.top)) this.top[k] = v;
    }
    if (c.usage !== undefined && c.usage !== null) {
      this.usageRaw = c.usage;
      this.usage = readUsage(c.usage);
    }
    for (const part of c.choices as unknown[]) this.choice(part as Record<string, unknown>);
  }

  private choice(part: Record<string, unknown>): void {
    const index = typeof part.index === 'number' ? part.index : 0;
    let c = this.choices.get(index);
    if (!c) {
      c = { index, message: null, text: null, rest: {} };
      this.choices.set(index, c);
    }
    for (const k in part) {
      if (k === 'index') continue;
      const v = part[k];
      if (k === 'delta') c.message = mergeDelta(c.message ?? { role: 'assistant', content: null }, v);
      else if (k === 'text') c.text = (c.text ?? '') + (typeof v === 'string' ? v : '');
      else if (v !== null || !(k in c.rest)) c.rest[k] = v;
    }
    if (!this.begun) this.begun = !!c.text || !!c.message?.content || (c.rest.finish_reason ?? null) !== null;
  }
}

/** The status an error event stands for: its numeric `code` where that is an HTTP error status, else 500. */
function errorStatus(c: Record<string, unknown>): number {
  const e = typeof c.error === 'object' && c.error !== null ? (c.error as Record<string, unknown>) : c;
  const code = e.code;
  return typeof code === 'number' && Number.isInteger(code) && code >= 400 && code <= 599 ? code : 500;
}

/** Strings are appended (content, reasoning), a role set, anything else replaced by a later non-null value. */
function mergeDelta(message: Record<string, unknown>, delta: unknown): Record<string, unknown> {
  if (typeof delta !== 'object' || delta === null) return message;
  const d = delta as Record<string, unknown>;
  for (const k in d) {
    const v = d[k];
    if (k === 'role') {
      if (typeof v === 'string') message.role = v;
    } else if (typeof v === 'string') message[k] = typeof message[k] === 'string' ? (message[k] as string) + v : v;
    else if (v !== null || !(k in message)) message[k] = v;
  }
  return message;
}
