// An engine's error answer, re-wrapped in the OpenAI shape llmgw uses for its own
// errors. Engines disagree: vLLM since 0.10.1 sends `{"error":{…,"code":400}}` with an
// integer code, older vLLM a flat `{"object":"error","message","type":"BadRequestError",
// "code":400}`, SGLang `{"object":"error","message",…}` or `{"error":{…}}`, and a proxy
// in between may answer with plain text. Clients should see one shape with a string
// `code` whatever engine served them; the engine's message is kept, since it is the
// one that says what was wrong with the request.

export interface OpenAIError {
  error: { message: string; type: string; param: string | null; code: string };
}

/** The OpenAI error body for an engine's answer of `status` with body `text`. */
export function rewrapEngineError(status: number, text: string, endpoint: string): OpenAIError {
  let message = '';
  let param: string | null = null;
  let code: string | null = null;
  try {
    const parsed = JSON.parse(text) as unknown;
    const o = (isObject(parsed) && isObject(parsed.error) ? parsed.error : parsed) as Record<string, unknown> | string;
    if (typeof o === 'string') message = o;
    else if (isObject(o)) {
      if (typeof o.message === 'string') message = o.message;
      else if (typeof o.detail === 'string') message = o.detail; // FastAPI's own errors
      if (typeof o.param === 'string') param = o.param;
      // An engine's string code (it may already speak OpenAI) is kept; an integer is the status again.
      if (typeof o.code === 'string' && /^[a-z][a-z0-9_]{0,63}$/.test(o.code)) code = o.code;
    }
  } catch {
    message = text.trim();
  }
  if (message === '') message = `the engine answered ${status} with no message`;
  if (message.length > 2_000) message = `${message.slice(0, 2_000)}…`;
  return { error: { message: `${message} (endpoint ${endpoint})`, type: typeFor(status), param, code: code ?? codeFor(status, message) } };
}

function typeFor(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 429) return 'rate_limit_error';
  return status >= 500 ? 'server_error' : 'invalid_request_error';
}

function codeFor(status: number, message: string): string {
  // vLLM: "This model's maximum context length is 8192 tokens. However, you requested …"
  if (/maximum context length|context length|too long/i.test(message)) return 'context_length_exceeded';
  switch (status) {
    case 400:
    case 422:
      return 'invalid_request';
    case 401:
      return 'invalid_api_key';
    case 403:
      return 'forbidden';
    case 404:
      return 'not_found';
    case 413:
      return 'body_too_large';
    case 429:
      return 'rate_limit_exceeded';
    default:
      return status >= 500 ? 'upstream_failed' : 'upstream_rejected';
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
