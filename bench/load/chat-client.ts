// Plays one conversation of a ChatWorkload against an OpenAI-compatible target, turn by
// turn, streaming: each turn re-sends the whole history with the answer the engine gave,
// and waits for that answer (and the user's think time) before the next one.

import type { ChatWorkload, Conversation } from './chat-workload.js';
import type { LoadClient, Sample } from './http-load.js';

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface TurnRecord {
  conversation: number;
  turn: number;
  sample: Sample;
  /** The messages sent (for the workload's shared-prefix statistics). */
  messages: readonly ChatMessage[];
  promptTokens: number;
  completionTokens: number;
}

export interface StreamedAnswer {
  content: string;
  promptTokens: number;
  completionTokens: number;
  /** An error event in the stream (an engine failing mid-answer). */
  error: string | undefined;
}

/** Reads an OpenAI chat SSE body: the content deltas, the usage chunk, any error event. */
export function parseChatStream(body: string): StreamedAnswer {
  const out: StreamedAnswer = { content: '', promptTokens: 0, completionTokens: 0, error: undefined };
  for (const event of body.split('\n\n')) {
    if (!event.startsWith('data: ')) continue;
    const data = event.slice(6);
    if (data === '[DONE]') continue;
    const chunk = JSON.parse(data) as {
      choices?: { delta?: { content?: string } }[];
      usage?: { prompt_tokens?: number; completion_tokens?: number };
      error?: { message?: string };
    };
    if (chunk.error) out.error = chunk.error.message ?? 'error event';
    for (const c of chunk.choices ?? []) out.content += c.delta?.content ?? '';
    if (chunk.usage) {
      out.promptTokens = chunk.usage.prompt_tokens ?? 0;
      out.completionTokens = chunk.usage.completion_tokens ?? 0;
    }
  }
  return out;
}

/** The header that names a conversation's tenant (its application), for proxies that hash on it. */
export const TENANT_HEADER = 'x-tenant';

/** The tenant a conversation belongs to: its application. */
export const tenantOf = (conv: Conversation): string => `app-${conv.system}`;

/**
 * Plays `conv`; calls `record` once per turn sent. Every turn carries its tenant in
 * TENANT_HEADER: a tenant-hash baseline keys on it, llmgw ignores it (it must infer
 * affinity from the prompt). A failed turn ends the conversation:
 * without its answer the next turn's history would be a different workload.
 */
export async function playConversation(
  client: LoadClient,
  model: string,
  workload: ChatWorkload,
  conv: Conversation,
  record: (r: TurnRecord) => void,
): Promise<void> {
  const messages: ChatMessage[] = [{ role: 'system', content: workload.systemPrompts[conv.system]! }];
  for (let i = 0; i < conv.turns.length; i++) {
    const turn = conv.turns[i]!;
    if (turn.thinkMs > 0) await new Promise((r) => setTimeout(r, turn.thinkMs));
    messages.push({ role: 'user', content: turn.user });
    const body = JSON.stringify({ model, messages, max_tokens: turn.maxTokens, stream: true, stream_options: { include_usage: true } });
    const { sample, body: text } = await client.post('/v1/chat/completions', body, { keepBody: true, headers: { [TENANT_HEADER]: tenantOf(conv) } });
    let answer: StreamedAnswer | undefined;
    if (sample.error === undefined && text !== undefined) {
      try {
        answer = parseChatStream(text);
        if (answer.error !== undefined) sample.error = `stream error: ${answer.error}`;
      } catch (err) {
        sample.error = `unreadable stream: ${(err as Error).message}`;
      }
    }
    record({
      conversation: conv.id,
      turn: i,
      sample,
      messages: messages.slice(),
      promptTokens: answer?.promptTokens ?? 0,
      completionTokens: answer?.completionTokens ?? 0,
    });
    if (sample.error !== undefined || !answer) return;
    messages.push({ role: 'assistant', content: answer.content });
  }
}
