// One error class over a closed set of codes. Every failure llmgw reports — to a
// client on the data port, to an operator in a log, to another thread — carries one
// of these codes, so callers branch on `code`, never on message text.

/** How each code reaches an HTTP client: status and the OpenAI error `type`. */
const CODES = {
  // runtime
  LLMGW_ACTOR_NOT_FOUND: { status: 500, type: 'server_error' },
  LLMGW_ACTOR_STOPPED: { status: 503, type: 'server_error' },
  LLMGW_ACTOR_EXISTS: { status: 500, type: 'server_error' },
  LLMGW_MAILBOX_FULL: { status: 503, type: 'server_error' },
  LLMGW_ASK_TIMEOUT: { status: 504, type: 'server_error' },
  LLMGW_THREAD_DIED: { status: 503, type: 'server_error' },
  LLMGW_HANDLER_FAILED: { status: 500, type: 'server_error' },
  LLMGW_SHUTTING_DOWN: { status: 503, type: 'server_error' },
  LLMGW_ESCALATED: { status: 500, type: 'server_error' },
  // config
  LLMGW_CONFIG_INVALID: { status: 500, type: 'server_error' },
  LLMGW_CONFIG_UNREADABLE: { status: 500, type: 'server_error' },
  // data port / engines
  LLMGW_INVALID_REQUEST: { status: 400, type: 'invalid_request_error' },
  LLMGW_BODY_TOO_LARGE: { status: 413, type: 'invalid_request_error' },
  // data port: what node:http cannot parse as a request
  LLMGW_HEADERS_TOO_LARGE: { status: 431, type: 'invalid_request_error' },
  LLMGW_REQUEST_TIMEOUT: { status: 408, type: 'invalid_request_error' },
  LLMGW_MODEL_NOT_FOUND: { status: 404, type: 'invalid_request_error' },
  LLMGW_NOT_FOUND: { status: 404, type: 'invalid_request_error' },
  LLMGW_METHOD_NOT_ALLOWED: { status: 405, type: 'invalid_request_error' },
  LLMGW_CONTEXT_TOO_LONG: { status: 400, type: 'invalid_request_error' },
  LLMGW_NO_ENDPOINT: { status: 503, type: 'server_error' },
  LLMGW_UPSTREAM_FAILED: { status: 502, type: 'server_error' },
  LLMGW_UPSTREAM_TIMEOUT: { status: 504, type: 'server_error' },
  // the request failed the same way on two endpoints: not retried further, it may be what breaks them
  LLMGW_REQUEST_POISONED: { status: 502, type: 'server_error' },
  LLMGW_UNAUTHORIZED: { status: 401, type: 'invalid_request_error' },
  // admission: shed from a full queue, or waited too long in it
  LLMGW_QUEUE_FULL: { status: 429, type: 'rate_limit_error' },
  LLMGW_QUEUE_TIMEOUT: { status: 503, type: 'server_error' },
  // a role's port could not be opened: the address is in use, or not this host's
  LLMGW_LISTEN_FAILED: { status: 500, type: 'server_error' },
  // cli
  LLMGW_ADMIN_UNREACHABLE: { status: 502, type: 'server_error' },
  // agent: a shard spec the engine launcher refuses (src/agent/engines/validate.ts). The
  // caller's fault: on the agent's control port it is a 400, never a retry.
  LLMGW_SHARD_INVALID: { status: 400, type: 'invalid_request_error' },
  // agent: a shard id that is live with a different spec; stop it first
  LLMGW_SHARD_CONFLICT: { status: 409, type: 'invalid_request_error' },
  // agent: a shard's process could not be started (missing binary, bad permissions)
  LLMGW_SPAWN_FAILED: { status: 500, type: 'server_error' },
  // agent: a rendezvous address never accepted a connection within its timeout
  LLMGW_RENDEZVOUS_TIMEOUT: { status: 504, type: 'server_error' },
  // agent: a process group still had members after SIGKILL and its grace period
  LLMGW_PROCESS_SURVIVED: { status: 500, type: 'server_error' },
  // agent: nvidia-smi missing, failing or unreadable; sysfs unreadable
  LLMGW_DISCOVERY_FAILED: { status: 500, type: 'server_error' },
  // control plane: a registration that cannot describe a node (a GPU index or fabric twice)
  LLMGW_REGISTRATION_INVALID: { status: 400, type: 'invalid_request_error' },
  // control plane: a node id the inventory does not hold
  LLMGW_NODE_UNKNOWN: { status: 404, type: 'invalid_request_error' },
  // control plane: a placement names a GPU or port that is no longer free (decided on a stale view)
  LLMGW_PLACEMENT_CONFLICT: { status: 409, type: 'invalid_request_error' },
  // admin port: a fleet route asked of a server whose config places no model (no profiles)
  LLMGW_NO_CONTROL_PLANE: { status: 409, type: 'invalid_request_error' },
  // agent stream: refused for who is asking (no trusted client certificate, a certificate
  // for another node, a first message that is no Register); a retry changes nothing
  LLMGW_STREAM_REFUSED: { status: 403, type: 'invalid_request_error' },
  // agent stream: could not be opened, broke, or is already closed; the agent reconnects
  LLMGW_STREAM_CLOSED: { status: 503, type: 'server_error' },
  // tenancy: a key was presented but is not allowed this model
  LLMGW_MODEL_NOT_ALLOWED: { status: 403, type: 'invalid_request_error' },
  // tenancy: a key's (or its project's, team's, org's) requests or tokens per minute are used up
  LLMGW_RATE_LIMITED: { status: 429, type: 'rate_limit_error' },
  // tenancy: a budget on the key's chain is spent and no fallback model is configured
  LLMGW_BUDGET_EXCEEDED: { status: 429, type: 'insufficient_quota' },
  // tenancy: the usage journal cannot be written, so a request could not be billed: refused instead
  LLMGW_USAGE_UNAVAILABLE: { status: 503, type: 'server_error' },
  // tenancy: an admin route asked of a server without `tenancy.store`
  LLMGW_TENANCY_OFF: { status: 409, type: 'invalid_request_error' },
  // tenancy: an organization, team, project or key that does not exist
  LLMGW_ENTITY_NOT_FOUND: { status: 404, type: 'invalid_request_error' },
  // tenancy: a name already taken under the same parent, or a name that matches several
  LLMGW_ENTITY_CONFLICT: { status: 409, type: 'invalid_request_error' },
  // tenancy: the store could not be opened, migrated, read or written
  LLMGW_STORE_FAILED: { status: 500, type: 'server_error' },
} as const satisfies Record<string, { status: number; type: string }>;

export type ErrorCode = keyof typeof CODES;

/** The form an error takes when it crosses a thread or a process boundary. */
export interface SerializedError {
  name: string;
  code: ErrorCode;
  message: string;
  details?: Record<string, unknown>;
}

export class LlmgwError extends Error {
  override readonly name = 'LlmgwError';
  readonly code: ErrorCode;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, details?: Record<string, unknown>) {
    super(message);
    this.code = code;
    this.details = details;
  }

  get status(): number {
    return CODES[this.code].status;
  }

  get openaiType(): string {
    return CODES[this.code].type;
  }

  /** Any thrown value as an LlmgwError; foreign errors keep their message. */
  static from(err: unknown, fallback: ErrorCode = 'LLMGW_HANDLER_FAILED'): LlmgwError {
    if (err instanceof LlmgwError) return err;
    if (isSerializedError(err)) return LlmgwError.deserialize(err);
    if (err instanceof Error) return new LlmgwError(fallback, err.message, { cause: err.name });
    return new LlmgwError(fallback, String(err));
  }

  serialize(): SerializedError {
    const out: SerializedError = { name: this.name, code: this.code, message: this.message };
    if (this.details) out.details = this.details;
    return out;
  }

  static deserialize(s: SerializedError): LlmgwError {
    return new LlmgwError(s.code in CODES ? s.code : 'LLMGW_HANDLER_FAILED', s.message, s.details);
  }

  /** The OpenAI error body: `{"error":{"message","type","param","code"}}`. */
  toOpenAI(param: string | null = null): { error: { message: string; type: string; param: string | null; code: string } } {
    return { error: { message: this.message, type: this.openaiType, param, code: openaiCode(this) } };
  }
}

function openaiCode(err: LlmgwError): string {
  switch (err.code) {
    case 'LLMGW_MODEL_NOT_FOUND':
      return 'model_not_found';
    case 'LLMGW_UNAUTHORIZED':
      return 'invalid_api_key';
    case 'LLMGW_CONTEXT_TOO_LONG':
      return 'context_length_exceeded';
    case 'LLMGW_RATE_LIMITED':
      return 'rate_limit_exceeded';
    case 'LLMGW_BUDGET_EXCEEDED':
      return 'insufficient_quota';
    default:
      return err.code.slice('LLMGW_'.length).toLowerCase();
  }
}

function isSerializedError(v: unknown): v is SerializedError {
  return typeof v === 'object' && v !== null && (v as SerializedError).name === 'LlmgwError' && typeof (v as SerializedError).code === 'string';
}

export const errorCodes = Object.freeze(Object.keys(CODES) as ErrorCode[]);
