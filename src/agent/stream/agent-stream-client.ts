// The agent's end of the agent stream: dials the control plane over HTTP/2 and opens
// the bidirectional Connect stream. Thin on purpose: it moves messages and says how a
// stream ended; what to send and what to do with what comes back is the agent's.
//
// mTLS unless `insecure: true` is given, and then only to an http:// URL: the scheme
// and the flag must agree, so neither a typo in the URL nor a forgotten flag sends
// the fleet's inventory in the clear.
import type { MessageInitShape } from '@bufbuild/protobuf';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { Http2SessionManager, createConnectTransport } from '@connectrpc/connect-node';
import { LlmgwError } from '../../errors.js';
import { AgentService, type AgentMessageSchema, type ControlMessage } from '../../messages/gen/llmgw/agent/v1/agent_pb.js';
import type { MtlsMaterial } from '../../net/mtls.js';

export type AgentMessageInit = MessageInitShape<typeof AgentMessageSchema>;

export type AgentStreamClientOptions = ({ readonly insecure?: false; readonly tls: MtlsMaterial } | { readonly insecure: true; readonly tls?: undefined }) & {
  /** The control plane's agent-stream URL: https://HOST:PORT (http:// with insecure). */
  readonly url: string;
  /** A connection silent this long is pinged; one that does not answer in as long is dropped. */
  readonly pingIntervalMs?: number;
};

export interface AgentStreamClient {
  /**
   * Opens one stream; `outgoing` is what the agent sends (a Register first). The
   * returned iterable yields what the control plane sends and ends when it ends the
   * stream; it throws LLMGW_STREAM_REFUSED when the control plane refused this agent,
   * LLMGW_STREAM_CLOSED when the stream could not be opened or broke.
   */
  open(outgoing: AsyncIterable<AgentMessageInit>, signal?: AbortSignal): AsyncIterable<ControlMessage>;
  /** Drops the HTTP/2 connection and every stream on it. */
  close(): void;
}

/** Codes that mean "not you", as opposed to "not now": a reconnect will not help. */
const REFUSALS = new Set([Code.Unauthenticated, Code.PermissionDenied, Code.InvalidArgument]);

export function createAgentStreamClient(options: AgentStreamClientOptions): AgentStreamClient {
  const url = parseUrl(options);
  const ping = options.pingIntervalMs ?? 15_000; // 15 s: a dead peer is noticed within half a minute
  const nodeOptions = options.insecure === true ? {} : { ca: options.tls.ca, cert: options.tls.cert, key: options.tls.key };
  const sessions = new Http2SessionManager(url, { pingIntervalMs: ping, pingTimeoutMs: ping }, nodeOptions);
  const transport = createConnectTransport({ baseUrl: url.href, httpVersion: '2', sessionManager: sessions });
  const client = createClient(AgentService, transport);

  return {
    async *open(outgoing, signal) {
      try {
        yield* client.connect(outgoing, signal ? { signal } : {});
      } catch (err) {
        throw streamError(err, url);
      }
    },
    close: () => sessions.abort(),
  };
}

function streamError(err: unknown, url: URL): LlmgwError {
  if (err instanceof LlmgwError) return err;
  const ce = ConnectError.from(err);
  const code = Code[ce.code].replace(/[A-Z]/g, (c, i: number) => (i ? '_' : '') + c.toLowerCase());
  return REFUSALS.has(ce.code)
    ? new LlmgwError('LLMGW_STREAM_REFUSED', `the control plane at ${url.origin} refused the stream: ${ce.rawMessage}`, { connectCode: code })
    : new LlmgwError('LLMGW_STREAM_CLOSED', `agent stream to ${url.origin}: ${ce.rawMessage}`, { connectCode: code });
}

function parseUrl(options: AgentStreamClientOptions): URL {
  let url: URL;
  try {
    url = new URL(options.url);
  } catch {
    throw new LlmgwError('LLMGW_CONFIG_INVALID', `agent stream: ${JSON.stringify(options.url)} is not a URL (e.g. https://control.example:4002)`);
  }
  const insecure = options.insecure === true;
  if (insecure && options.tls !== undefined) throw new LlmgwError('LLMGW_CONFIG_INVALID', 'agent stream: insecure and tls are both set; choose one');
  if (!insecure && !options.tls) throw new LlmgwError('LLMGW_CONFIG_INVALID', 'agent stream: tls (ca, cert, key) is required; set insecure: true to dial plaintext HTTP/2 on a trusted network');
  const want = insecure ? 'http:' : 'https:';
  if (url.protocol !== want) {
    throw new LlmgwError(
      'LLMGW_CONFIG_INVALID',
      insecure ? `agent stream: insecure is set but ${url.href} is not http://; plaintext goes only to an http:// URL` : `agent stream: ${url.href} is not https://; an http:// URL needs insecure: true`,
    );
  }
  return url;
}
