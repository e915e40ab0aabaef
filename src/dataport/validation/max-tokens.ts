import type { RequestFault } from './fault.js';

/**
 * A completion longer than the model's context can never be served: refused here as
 * vLLM refuses it, instead of after a trip to an engine. `maxModelLen` is the largest
 * context among the model's ready endpoints (null while none reported one). The prompt's
 * own length is left to the engine, whose tokenizer alone knows it.
 */
export function maxTokensFault(body: Record<string, unknown>, maxModelLen: number | null): RequestFault | null {
  if (maxModelLen === null) return null;
  // The newer name wins where both are sent, as in vLLM.
  const param = typeof body.max_completion_tokens === 'number' ? 'max_completion_tokens' : 'max_tokens';
  const asked = body[param];
  // The prompt takes at least one token of the context, so asking for all of it never fits.
  if (typeof asked !== 'number' || asked < maxModelLen) return null;
  return { param, message: `'${param}' is too large: ${asked}. This model's maximum context length is ${maxModelLen} tokens, prompt included; ask for fewer than ${maxModelLen}` };
}
