// What the scheduler reads off a request body: the prompt text whose head it hashes for
// prefix affinity, and a session key. Both work on the already-parsed body.

import type { IncomingMessage } from 'node:http';

/**
 * The prompt as one string, in the order an engine's chat template lays it out (role,
 * then content, per message), or null when there is no text to match (embeddings,
 * token-id prompts). Not the template itself: what matters is that equal conversations
 * give equal strings and that a continued one extends its predecessor's.
 */
export function promptText(path: string, body: Record<string, unknown>): string | null {
  if (path === '/v1/chat/completions') {
    if (!Array.isArray(body.messages)) return null;
    let text = '';
    for (const m of body.messages as unknown[]) {
      if (typeof m !== 'object' || m === null) continue;
      const { role, content } = m as { role?: unknown; content?: unknown };
      text += `${typeof role === 'string' ? role : ''}\n${contentText(content)}\n\n`;
    }
    return text;
  }
  if (path === '/v1/completions') {
    const p = body.prompt;
    if (typeof p === 'string') return p;
    if (Array.isArray(p) && typeof p[0] === 'string') return p[0];
  }
  return null;
}

/** Message content as text: a string, or the text parts of a multi-part content array. */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  let text = '';
  for (const part of content as unknown[]) {
    const t = (part as { text?: unknown } | null)?.text;
    if (typeof t === 'string') text += t;
  }
  return text;
}

/** The header a client sets to keep a conversation on one endpoint. */
export const SESSION_HEADER = 'x-llmgw-session';

/** `x-llmgw-session`, else the OpenAI `user` field, else null. */
export function sessionKey(req: IncomingMessage, body: Record<string, unknown>): string | null {
  const h = req.headers[SESSION_HEADER];
  if (typeof h === 'string' && h !== '') return h;
  return typeof body.user === 'string' && body.user !== '' ? body.user : null;
}

/** The request's prompt text, built once: admission, the scheduler and accounting all read it. */
export function promptOf(ctx: { readonly path: string; readonly body: Record<string, unknown>; prompt?: string | null }): string | null {
  if (ctx.prompt === undefined) ctx.prompt = promptText(ctx.path, ctx.body);
  return ctx.prompt;
}

/** The prompt's tokens, estimated at four characters a token where no tokenizer is at hand (0 without a prompt text). */
export function promptTokensOf(ctx: Parameters<typeof promptOf>[0]): number {
  return Math.ceil((promptOf(ctx)?.length ?? 0) / 4);
}
