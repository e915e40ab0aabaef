// The control plane's end of the agent stream: a Connect service with one
// bidirectional method, served over HTTP/2. Thin on purpose: it verifies who is on the
// other end and hands each verified stream to `onStream`; what the messages mean is
// the control plane's business.
//
// mTLS by default: the server asks for a client certificate signed by the fleet's CA
// and refuses a stream whose first message registers a node the certificate does not
// name. Plaintext (h2c) only when `insecure: true` is given, for a trusted network or a
// test; there is no fallback from one to the other.
import * as http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { create, type MessageInitShape } from '@bufbuild/protobuf';
import { Code, ConnectError, createContextKey, createContextValues, type HandlerContext } from '@connectrpc/connect';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import { LlmgwError } from '../../errors.js';
import { AgentService, ControlMessageSchema, type AgentMessage, type ControlMessage } from '../../messages/gen/llmgw/agent/v1/agent_pb.js';
import { parseHostPort, urlFor } from '../../net/host-port.js';
import { listenFailed } from '../../net/http-listen.js';
import type { MtlsMaterial } from '../../net/mtls.js';
import { PushQueue } from '../../net/push-queue.js';
import { certificateIdentities, identityProblem, trustProblem, type PeerTls } from './peer-identity.js';

/**
 * Called once per verified stream. `incoming` yields the Register first, then every
 * later message until the agent ends the stream; `send` queues a message to the agent
 * and throws LLMGW_STREAM_CLOSED once the stream is gone, LLMGW_MAILBOX_FULL when the agent is not reading. The stream ends when this
 * returns (or fails with what it throws); `signal` aborts when the agent goes away.
 */
export type OnAgentStream = (nodeId: string, incoming: AsyncIterable<AgentMessage>, send: (msg: ControlMessageInit) => void, signal: AbortSignal) => Promise<void> | void;

/** A ControlMessage or the plain object form of one (`{ body: { case: 'stopShard', value: {…} } }`). */
export type ControlMessageInit = MessageInitShape<typeof ControlMessageSchema>;

/** How the server is secured: mTLS, or plaintext asked for by name. `insecure` is the discriminant. */
export type StreamSecurity = { readonly insecure?: false; readonly tls: MtlsMaterial } | { readonly insecure: true; readonly tls?: undefined };

export type AgentStreamServerOptions = StreamSecurity & {
  /** HOST:PORT; port 0 picks a free one. */
  readonly listen: string;
  readonly onStream: OnAgentStream;
  /**
   * How long a stream may go without its Register before it is refused; default 60 s.
   * Long, because a whole fleet reconnecting at once (a control-plane restart) queues
   * its Registers for tens of seconds: refusing them early makes every agent dial again
   * and the herd never drains. A silent peer still holds a stream only this long.
   */
  readonly registerTimeoutMs?: number;
  /** Messages queued to one agent and not yet read before `send` refuses; default 1024. */
  readonly sendCapacity?: number;
};

export interface AgentStreamServer {
  /** `https://HOST:PORT`, or `http://` when insecure. */
  readonly url: string;
  readonly port: number;
  /** Ends every open stream and stops listening. */
  close(): Promise<void>;
}

const PEER = createContextKey<PeerTls>({ kind: 'insecure' }, { description: 'what TLS said about the agent' });

/** Reads the peer's TLS facts off the request, once per stream. */
function peerOf(req: http2.Http2ServerRequest, secure: boolean): PeerTls {
  if (!secure) return { kind: 'insecure' };
  const socket = req.stream.session?.socket as TLSSocket | undefined;
  const cert = socket?.getPeerCertificate();
  const presented = cert !== undefined && cert !== null && Object.keys(cert).length > 0;
  return {
    kind: 'tls',
    authorized: socket?.authorized === true,
    authorizationError: socket?.authorizationError ? String(socket.authorizationError) : null,
    presented,
    identities: presented ? certificateIdentities(cert) : [],
  };
}

export async function createAgentStreamServer(options: AgentStreamServerOptions): Promise<AgentStreamServer> {
  const secure = securityOf(options);
  const open = new Set<PushQueue<ControlMessage>>();

  async function* connect(requests: AsyncIterable<AgentMessage>, ctx: HandlerContext): AsyncIterable<ControlMessage> {
    const peer = ctx.values.get(PEER);
    // Refuse an untrusted peer before reading a byte of what it sends.
    const untrusted = trustProblem(peer);
    if (untrusted) throw new ConnectError(untrusted, Code.Unauthenticated);

    const it = requests[Symbol.asyncIterator]();
    const first = await registerWithin(it, options.registerTimeoutMs ?? 60_000);
    if (first.done || first.value.body.case !== 'register') {
      throw new ConnectError(`the first message of the stream must be a Register, got ${first.done ? 'the end of the stream' : (first.value.body.case ?? 'an empty message')}`, Code.InvalidArgument);
    }
    const register = first.value;
    const nodeId = first.value.body.value.nodeId;
    const problem = identityProblem(peer, nodeId);
    if (problem) throw new ConnectError(problem, Code.PermissionDenied);

    const out = new PushQueue<ControlMessage>(options.sendCapacity ?? 1024);
    open.add(out);
    const incoming: AsyncIterable<AgentMessage> = {
      async *[Symbol.asyncIterator]() {
        yield register;
        for (let r = await it.next(); !r.done; r = await it.next()) yield r.value;
      },
    };
    out.push(create(ControlMessageSchema, { body: { case: 'registered', value: { nodeId } } }));
    const send = (msg: ControlMessageInit): void => out.push(create(ControlMessageSchema, msg));
    const abandon = (): void => out.end();
    ctx.signal.addEventListener('abort', abandon, { once: true });
    Promise.resolve()
      .then(() => options.onStream(nodeId, incoming, send, ctx.signal))
      .then(
        () => out.end(),
        (err: unknown) => out.end(new ConnectError(LlmgwError.from(err).message, Code.Internal)),
      );
    try {
      yield* out;
    } finally {
      ctx.signal.removeEventListener('abort', abandon);
      open.delete(out);
      out.end();
    }
  }

  const handler = connectNodeAdapter({
    routes: (router) => router.service(AgentService, { connect }),
    contextValues: (req) => createContextValues().set(PEER, peerOf(req as http2.Http2ServerRequest, secure !== null)),
  });
  // rejectUnauthorized is off so that a peer without a trusted certificate is refused
  // by the handler, before it reads a message, with a sentence saying why; refused in
  // the handshake, the agent would see only a reset connection. The one route served
  // is the agent stream, so such a peer reaches nothing else.
  const server = secure
    ? http2.createSecureServer({ ca: secure.ca, cert: secure.cert, key: secure.key, requestCert: true, rejectUnauthorized: false, allowHTTP1: false }, handler)
    : http2.createServer(handler);
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (s: http2.ServerHttp2Session) => {
    sessions.add(s);
    s.once('close', () => sessions.delete(s));
  });

  const { host, port } = parseHostPort(options.listen, 'agent stream listen address');
  await new Promise<void>((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException): void => reject(listenFailed(err, options.listen, port, { key: 'agent stream listen address' }));
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
  const bound = server.address() as AddressInfo;

  return {
    url: urlFor(bound.address, bound.port, secure ? 'https' : 'http'),
    port: bound.port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const q of open) q.end(new ConnectError('the control plane is shutting down', Code.Unavailable));
        // GOAWAY lets the streams just ended send their trailers; a session that
        // outlives that is cut so that close() cannot hang on an agent that stays silent.
        const cut = setTimeout(() => sessions.forEach((s) => s.destroy()), 1000);
        server.close(() => {
          clearTimeout(cut);
          resolve();
        });
        for (const s of sessions) s.close();
      }),
  };
}

/** The stream's first message, or a refusal once `ms` pass without one: a silent peer holds no stream. */
async function registerWithin(it: AsyncIterator<AgentMessage>, ms: number): Promise<IteratorResult<AgentMessage>> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ConnectError(`no Register within ${ms} ms of opening the stream`, Code.DeadlineExceeded)), ms);
  });
  try {
    return await Promise.race([it.next(), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The TLS material, or null for plaintext; neither given is a config error, not a default. */
function securityOf(options: StreamSecurity): MtlsMaterial | null {
  if (options.insecure === true) {
    if (options.tls !== undefined) throw new LlmgwError('LLMGW_CONFIG_INVALID', 'agent stream: insecure and tls are both set; choose one');
    return null;
  }
  if (!options.tls) throw new LlmgwError('LLMGW_CONFIG_INVALID', 'agent stream: tls (ca, cert, key) is required; set insecure: true to serve plaintext HTTP/2 on a trusted network');
  return options.tls;
}
