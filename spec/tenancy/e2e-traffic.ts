// Client traffic for tenancy's end-to-end specs: many chat requests on one key, each
// with its own x-request-id, streamed, not streamed, or left by its client mid-stream,
// and what each client really received.

import { Agent, request } from 'undici';
import { tokenize } from '../../src/sim/tokenizer.js';

export type Kind = 'json' | 'stream' | 'abort';

export interface Sent {
  id: string;
  kind: Kind;
  /** The answer reached the client whole: 200, body read to its end (`[DONE]` for a stream). */
  complete: boolean;
  status: number | null;
  /** The usage the client was given (complete answers only). */
  promptTokens: number;
  completionTokens: number;
  /** Content events the client read before it left (aborted streams). */
  events: number;
  /** Tokens of the text the client read, by the sim's tokenizer (aborted streams). */
  tokens: number;
  /** The error body's code of a refused request. */
  code: string | null;
}

export interface TrafficOptions {
  url: string;
  /** The API key a request of each kind presents. */
  key: (kind: Kind) => string;
  /** Requests to send at most; fewer when `stopped` turns true first. */
  total: number;
  concurrency: number;
  /** The max_tokens of a request of each kind. */
  maxTokens: (kind: Kind) => number;
  /** The kind of request `i`. */
  kind: (i: number) => Kind;
  /** How many content events an aborting client reads before it leaves. */
  abortAfter?: number;
  prefix?: string;
  /** Checked before each request: true stops sending (requests in flight still end). */
  stopped?: () => boolean;
  /** Told of each request as it ends. */
  onEnd?: (s: Sent) => void;
}

export const PROMPT = 'Count slowly from one to one hundred.';

/** Sends the requests, `concurrency` at a time; every request's outcome, in the order they ended. */
export async function traffic(o: TrafficOptions): Promise<Sent[]> {
  const agent = new Agent({ connections: o.concurrency, pipelining: 1 });
  const out: Sent[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < o.total && !(o.stopped?.() ?? false)) {
      const i = next++;
      const s = await one(agent, o, i);
      out.push(s);
      o.onEnd?.(s);
    }
  };
  try {
    await Promise.all(Array.from({ length: o.concurrency }, worker));
  } finally {
    await agent.destroy();
  }
  return out;
}

async function one(agent: Agent, o: TrafficOptions, i: number): Promise<Sent> {
  const kind = o.kind(i);
  const s: Sent = { id: `${o.prefix ?? 'req'}-${i}`, kind, complete: false, status: null, promptTokens: 0, completionTokens: 0, events: 0, tokens: 0, code: null };
  const body = {
    model: 'm',
    messages: [{ role: 'user', content: PROMPT }],
    max_tokens: o.maxTokens(kind),
    ...(kind === 'json' ? {} : { stream: true, stream_options: { include_usage: true } }),
  };
  try {
    const res = await request(`${o.url}/v1/chat/completions`, {
      method: 'POST',
      dispatcher: agent,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${o.key(kind)}`, 'x-request-id': s.id },
      body: JSON.stringify(body),
    });
    s.status = res.statusCode;
    if (res.statusCode !== 200) {
      const text = await res.body.text();
      s.code = (JSON.parse(text) as { error?: { code?: string } }).error?.code ?? null;
      return s;
    }
    if (kind === 'json') {
      const reply = (await res.body.json()) as { usage: { prompt_tokens: number; completion_tokens: number } };
      s.promptTokens = reply.usage.prompt_tokens;
      s.completionTokens = reply.usage.completion_tokens;
      s.complete = true;
      return s;
    }
    await readStream(res.body, s, kind === 'abort' ? (o.abortAfter ?? 2) : Infinity);
  } catch {
    // A connection refused or cut (the server stopping or killed): not complete.
  }
  return s;
}

async function readStream(body: AsyncIterable<Buffer> & { destroy(): unknown }, s: Sent, leaveAfter: number): Promise<void> {
  let carry = '';
  let text = '';
  let done = false;
  let broken = false;
  for await (const chunk of body) {
    carry += chunk.toString('utf8');
    let end: number;
    while ((end = carry.indexOf('\n\n')) !== -1) {
      const data = carry.slice(0, end).replace(/^data: /, '');
      carry = carry.slice(end + 2);
      if (data === '[DONE]') {
        done = true;
        continue;
      }
      const event = JSON.parse(data) as { choices?: { delta?: { content?: string } }[]; usage?: { prompt_tokens: number; completion_tokens: number } | null; error?: unknown };
      if (event.error) broken = true;
      if (event.usage) {
        s.promptTokens = event.usage.prompt_tokens;
        s.completionTokens = event.usage.completion_tokens;
      }
      const content = event.choices?.[0]?.delta?.content ?? '';
      if (content === '') continue;
      s.events++;
      text += content;
      if (s.events >= leaveAfter) {
        s.tokens = tokenize(text).length;
        body.destroy();
        return;
      }
    }
  }
  s.tokens = tokenize(text).length;
  s.complete = done && !broken;
}
