// Runs one validated chat/completions request on the engine and writes the OpenAI
// response, streaming (SSE) or not, in vLLM's wire format:
// - streaming: headers and the `delta.role` chunk go out with the first token (vLLM sends
//   nothing before the engine's first output, so time to first byte = TTFT); every chunk
//   has the same id and `created`; `finish_reason` rides on the last content chunk; with
//   `stream_options.include_usage` a last chunk has `choices: []` and `usage`; then
//   `data: [DONE]`.
// - a client that goes away aborts its sequences, which frees their KV blocks at once.
// - backpressure: when the socket's buffer is full, tokens are merged into one pending
//   delta per choice and written on 'drain', so a slow reader costs at most its own text,
//   never an unbounded queue of chunks (vLLM merges deltas for slow consumers the same way).

import type { ServerResponse } from 'node:http';
import type { FinishReason, Sequence, SimEngine } from './engine.js';
import type { GenerationRequest } from './requests.js';
import type { OutputPlan } from './text.js';
import { planOutput } from './text.js';

export interface ResponderContext {
  engine: SimEngine;
  model: string;
  engineSeed: number;
}

interface Choice {
  index: number;
  /** Choice within its prompt; the first one carries the prompt's usage figures. */
  sub: number;
  prompt: number[];
  plan: OutputPlan;
  seq: Sequence | null;
  /** Text not yet written (stream) or the whole text so far (non-stream). */
  text: string;
  emitted: number;
  finish: FinishReason | null;
  /** Stream: the finish reason has not been written yet. */
  finishPending: boolean;
}

let nextSeq = 0;

export function respondGeneration(ctx: ResponderContext, gen: GenerationRequest, res: ServerResponse, requestId: string): void {
  const chat = gen.kind === 'chat';
  const id = (chat ? 'chatcmpl-' : 'cmpl-') + requestId;
  const created = Math.floor(Date.now() / 1000);
  const choices: Choice[] = [];
  gen.prompts.forEach((prompt, p) => {
    for (let sub = 0; sub < gen.n; sub++) {
      const plan = planOutput({
        engineSeed: ctx.engineSeed,
        requestSeed: gen.seed,
        promptTokenIds: prompt,
        index: sub,
        maxTokens: gen.maxTokens,
        room: ctx.engine.maxModelLen - prompt.length,
      });
      choices.push({ index: p * gen.n + sub, sub, prompt, plan, seq: null, text: '', emitted: 0, finish: null, finishPending: false });
    }
  });

  let complete = false;
  let blocked = false;
  const object = chat ? 'chat.completion.chunk' : 'text_completion';
  const send = (data: string): void => {
    if (!res.write(`data: ${data}\n\n`)) blocked = true;
  };
  const chunk = (c: Choice, text: string, finishReason: FinishReason | null): string =>
    JSON.stringify({
      id,
      object,
      created,
      model: ctx.model,
      choices: [
        chat
          ? { index: c.index, delta: { content: text }, logprobs: null, finish_reason: finishReason, stop_reason: null }
          : { index: c.index, text, logprobs: null, finish_reason: finishReason, stop_reason: null },
      ],
    });

  const flushStream = (): void => {
    if (complete || res.destroyed) return;
    if (!res.headersSent) {
      if (!choices.some((c) => c.emitted > 0 || c.finish !== null)) return;
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-request-id': requestId });
      if (chat) {
        for (const c of choices) {
          send(JSON.stringify({ id, object, created, model: ctx.model, choices: [{ index: c.index, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }] }));
        }
      }
    }
    if (blocked) return; // 'drain' calls back; meanwhile text accumulates per choice
    for (const c of choices) {
      const finishNow = c.finishPending && c.finish !== 'abort' ? c.finish : null;
      if (c.text.length === 0 && finishNow === null) continue;
      send(chunk(c, c.text, finishNow));
      c.text = '';
      if (finishNow !== null) c.finishPending = false;
    }
    if (!choices.every((c) => c.finish !== null)) return;
    complete = true;
    if (choices.some((c) => c.finish === 'abort')) {
      // Only the engine shutting down aborts a sequence whose client is still there.
      send(JSON.stringify({ error: { message: 'The engine is shutting down', type: 'ServiceUnavailableError', param: null, code: 503 } }));
    } else if (gen.includeUsage) {
      send(JSON.stringify({ id, object, created, model: ctx.model, choices: [], usage: usage(choices) }));
    }
    res.end('data: [DONE]\n\n');
  };

  const finishWhole = (): void => {
    if (complete || res.destroyed || !choices.every((c) => c.finish !== null)) return;
    complete = true;
    if (choices.some((c) => c.finish === 'abort')) {
      const body = { error: { message: 'The engine is shutting down', type: 'ServiceUnavailableError', param: null, code: 503 } };
      res.writeHead(503, { 'content-type': 'application/json', 'x-request-id': requestId });
      res.end(JSON.stringify(body));
      return;
    }
    const body = {
      id,
      object: chat ? 'chat.completion' : 'text_completion',
      created,
      model: ctx.model,
      choices: choices.map((c) =>
        chat
          ? { index: c.index, message: { role: 'assistant', content: c.text, tool_calls: [], reasoning_content: null }, logprobs: null, finish_reason: c.finish, stop_reason: null }
          : { index: c.index, text: c.text, logprobs: null, finish_reason: c.finish, stop_reason: null, prompt_logprobs: null },
      ),
      usage: usage(choices),
      prompt_logprobs: null,
    };
    const json = JSON.stringify(body);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(json), 'x-request-id': requestId });
    res.end(json);
  };

  const progress = gen.stream ? flushStream : finishWhole;
  if (gen.stream) {
    res.on('drain', () => {
      blocked = false;
      flushStream();
    });
  }
  // The client went away before the response was complete: abort, so the blocks free now.
  res.on('close', () => {
    if (complete) return;
    complete = true;
    for (const c of choices) if (c.seq && c.finish === null) ctx.engine.abort(c.seq);
  });

  for (const c of choices) {
    c.seq = ctx.engine.submit({
      id: `${id}-${nextSeq++}`,
      promptTokenIds: c.prompt,
      outputTokenIds: c.plan.tokenIds,
      finishReason: c.plan.finishReason,
      priority: gen.priority,
      onToken: (_seq, i) => {
        c.emitted = i + 1;
        c.text += c.plan.pieces[i]!;
        // The last token waits for onFinish (called right after) so that it leaves in the
        // same chunk as finish_reason, as vLLM sends it.
        if (gen.stream && i < c.plan.tokenIds.length - 1) flushStream();
      },
      onFinish: (_seq, reason) => {
        c.finish = reason;
        c.finishPending = true;
        progress();
      },
    });
  }
}

function usage(choices: readonly Choice[]): Record<string, unknown> {
  let prompt = 0;
  let completion = 0;
  let cached = 0;
  for (const c of choices) {
    completion += c.emitted;
    if (c.sub === 0) {
      prompt += c.prompt.length;
      cached += Math.max(0, c.seq?.numCachedTokens ?? 0);
    }
  }
  return { prompt_tokens: prompt, total_tokens: prompt + completion, completion_tokens: completion, prompt_tokens_details: { cached_tokens: cached } };
}
