// Validation of OpenAI request bodies for the simulated engine, turning them into one
// normalized GenerationRequest. Messages follow vLLM's (≥ 0.10) wording where vLLM has
// one, so a client sees what it would see from a real engine; every failure is an
// LlmgwError whose `details.param` names the offending field.

import { LlmgwError } from '../errors.js';
import type { ChatMessage } from './tokenizer.js';
import { applyChatTemplate, tokenize } from './tokenizer.js';

export interface ServedModel {
  name: string;
  maxModelLen: number;
  /** Whether the engine runs with a priority policy: a non-zero `priority` is refused otherwise, as vLLM does. */
  priorityScheduling: boolean;
}

/** A chat or completions request reduced to what the engine needs. */
export interface GenerationRequest {
  kind: 'chat' | 'completion';
  /** Token ids of each prompt (chat: one; completions may batch several). */
  prompts: number[][];
  /** Choices per prompt. */
  n: number;
  stream: boolean;
  includeUsage: boolean;
  /** max_tokens (or max_completion_tokens); undefined lets the "model" decide. */
  maxTokens: number | undefined;
  /** The request's sampling seed, if any. */
  seed: number | undefined;
  /** vLLM's `priority` extension: lower runs first under a priority policy; 0 when absent. */
  priority: number;
}

/** Most choices per prompt; vLLM has no hard limit, but the sim should not be a memory bomb. */
const MAX_N = 128;

export function parseChatRequest(body: unknown, served: ServedModel): GenerationRequest {
  const b = asObject(body);
  checkModel(b, served);
  const messages = b['messages'];
  if (!Array.isArray(messages) || messages.length === 0) {
    throw invalid(messages === undefined ? "'messages' is required" : "'messages' must be a non-empty array of messages", 'messages');
  }
  messages.forEach((m, i) => checkMessage(m, i));
  const addGenerationPrompt = optionalBoolean(b, 'add_generation_prompt') ?? true;
  const prompt = applyChatTemplate(messages as ChatMessage[], { addGenerationPrompt, tools: b['tools'] ?? undefined });
  // The newer name wins, as in vLLM; both are validated.
  const maxCompletionTokens = optionalCount(b, 'max_completion_tokens');
  const maxTokens = optionalCount(b, 'max_tokens');
  return common(b, 'chat', [tokenize(prompt)], maxCompletionTokens ?? maxTokens, served);
}

export function parseCompletionRequest(body: unknown, served: ServedModel): GenerationRequest {
  const b = asObject(body);
  checkModel(b, served);
  const prompts = completionPrompts(b['prompt']);
  return common(b, 'completion', prompts, optionalCount(b, 'max_tokens'), served);
}

/** `POST /tokenize`: `{prompt}` or `{messages}` → token ids. */
export function parseTokenizeRequest(body: unknown, served: ServedModel): number[] {
  const b = asObject(body);
  checkModel(b, served);
  if (b['messages'] !== undefined) {
    const messages = b['messages'];
    if (!Array.isArray(messages)) throw invalid("'messages' must be an array of messages", 'messages');
    messages.forEach((m, i) => checkMessage(m, i));
    const addGenerationPrompt = optionalBoolean(b, 'add_generation_prompt') ?? true;
    return tokenize(applyChatTemplate(messages as ChatMessage[], { addGenerationPrompt, tools: b['tools'] ?? undefined }));
  }
  if (typeof b['prompt'] !== 'string') throw invalid("either 'prompt' (a string) or 'messages' is required", 'prompt');
  return tokenize(b['prompt']);
}

function common(b: Record<string, unknown>, kind: GenerationRequest['kind'], prompts: number[][], maxTokens: number | undefined, served: ServedModel): GenerationRequest {
  const stream = optionalBoolean(b, 'stream') ?? false;
  const options = b['stream_options'];
  let includeUsage = false;
  if (options !== undefined && options !== null) {
    if (!stream) throw invalid('Stream options can only be defined when `stream=True`.', 'stream_options');
    if (typeof options !== 'object' || Array.isArray(options)) throw invalid("'stream_options' must be an object", 'stream_options');
    includeUsage = optionalBoolean(options as Record<string, unknown>, 'include_usage', 'stream_options.include_usage') ?? false;
  }
  const n = optionalCount(b, 'n') ?? 1;
  if (n > MAX_N) throw invalid(`'n' must be at most ${MAX_N}, not ${n}`, 'n');
  const seed = b['seed'];
  if (seed !== undefined && seed !== null && !Number.isSafeInteger(seed)) throw invalid("'seed' must be an integer", 'seed');
  const priority = b['priority'] ?? 0;
  if (!Number.isSafeInteger(priority)) throw invalid("'priority' must be an integer", 'priority');
  if (priority !== 0 && !served.priorityScheduling) throw invalid(`Got priority ${String(priority)} but Priority scheduling is not enabled.`, 'priority');
  for (const p of prompts) checkContext(p.length, maxTokens, served.maxModelLen);
  return { kind, prompts, n, stream, includeUsage, maxTokens, seed: typeof seed === 'number' ? seed : undefined, priority: priority as number };
}

function checkContext(promptTokens: number, maxTokens: number | undefined, maxModelLen: number): void {
  if (promptTokens >= maxModelLen) {
    throw new LlmgwError(
      'LLMGW_CONTEXT_TOO_LONG',
      `This model's maximum context length is ${maxModelLen} tokens. However, your request has ${promptTokens} input tokens. Please reduce the length of the input messages.`,
      { param: 'messages' },
    );
  }
  if (maxTokens !== undefined && promptTokens + maxTokens > maxModelLen) {
    throw new LlmgwError(
      'LLMGW_CONTEXT_TOO_LONG',
      `'max_tokens' or 'max_completion_tokens' is too large: ${maxTokens}. This model's maximum context length is ${maxModelLen} tokens and your request has ${promptTokens} input tokens (${maxTokens} > ${maxModelLen} - ${promptTokens}).`,
      { param: 'max_tokens' },
    );
  }
}

function completionPrompts(prompt: unknown): number[][] {
  const bad = (): LlmgwError => invalid("'prompt' must be a string, an array of strings, an array of token ids or an array of arrays of token ids", 'prompt');
  if (prompt === undefined || prompt === null) throw invalid("'prompt' is required", 'prompt');
  if (typeof prompt === 'string') return [nonEmpty(tokenize(prompt))];
  if (!Array.isArray(prompt) || prompt.length === 0) throw bad();
  if (prompt.every((p) => typeof p === 'string')) return prompt.map((p: string) => nonEmpty(tokenize(p)));
  if (prompt.every(isTokenId)) return [prompt as number[]];
  if (prompt.every((p) => Array.isArray(p) && p.length > 0 && p.every(isTokenId))) return prompt as number[][];
  throw bad();
}

function nonEmpty(ids: number[]): number[] {
  if (ids.length === 0) throw invalid("'prompt' must not be empty", 'prompt');
  return ids;
}

function isTokenId(v: unknown): boolean {
  return Number.isInteger(v) && (v as number) >= 0;
}

function checkModel(b: Record<string, unknown>, served: ServedModel): void {
  const model = b['model'];
  // vLLM serves its (only) model when the field is absent.
  if (model === undefined || model === null) return;
  if (model !== served.name) {
    throw new LlmgwError('LLMGW_MODEL_NOT_FOUND', `The model \`${typeof model === 'string' ? model : JSON.stringify(model)}\` does not exist.`, { param: 'model' });
  }
}

function checkMessage(m: unknown, i: number): void {
  const where = `messages[${i}]`;
  if (typeof m !== 'object' || m === null || Array.isArray(m)) throw invalid(`${where} must be an object with a 'role'`, 'messages');
  const msg = m as Record<string, unknown>;
  if (typeof msg['role'] !== 'string' || msg['role'] === '') throw invalid(`${where}.role must be a non-empty string`, 'messages');
  const c = msg['content'];
  if (c === undefined || c === null || typeof c === 'string') return;
  if (!Array.isArray(c)) throw invalid(`${where}.content must be a string or an array of content parts`, 'messages');
  c.forEach((part, j) => {
    if (typeof part !== 'object' || part === null || typeof (part as { type?: unknown }).type !== 'string') {
      throw invalid(`${where}.content[${j}] must be an object with a 'type'`, 'messages');
    }
    const p = part as { type: string; text?: unknown };
    if (p.type === 'text' && typeof p.text !== 'string') throw invalid(`${where}.content[${j}].text must be a string`, 'messages');
  });
}

function asObject(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalid('The request body must be a JSON object', null);
  return body as Record<string, unknown>;
}

function optionalBoolean(b: Record<string, unknown>, key: string, param = key): boolean | undefined {
  const v = b[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw invalid(`'${param}' must be a boolean, not ${describe(v)}`, param);
  return v;
}

/** A whole number ≥ 1, or absent. */
function optionalCount(b: Record<string, unknown>, key: string): number | undefined {
  const v = b[key];
  if (v === undefined || v === null) return undefined;
  if (!Number.isSafeInteger(v) || (v as number) < 1) throw invalid(`'${key}' must be an integer ≥ 1, not ${describe(v)}`, key);
  return v as number;
}

function describe(v: unknown): string {
  const s = JSON.stringify(v);
  return s === undefined ? typeof v : s.length > 40 ? `${s.slice(0, 40)}…` : s;
}

function invalid(message: string, param: string | null): LlmgwError {
  return new LlmgwError('LLMGW_INVALID_REQUEST', message, param === null ? undefined : { param });
}
