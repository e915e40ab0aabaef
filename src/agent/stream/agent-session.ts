// One stream's life as reconnectForever runs it: open, send the Register, report the
// control plane's acceptance, hand every later message on, end with the stream.
import type { ControlMessage } from '../../messages/gen/llmgw/agent/v1/agent_pb.js';
import { PushQueue } from '../../net/push-queue.js';
import type { AgentMessageInit, AgentStreamClient } from './agent-stream-client.js';
import type { ReconnectOptions } from './reconnect.js';

export interface AgentSessionOptions {
  readonly client: AgentStreamClient;
  /** Built anew for every stream: a reconnect reports the inventory and shards of now. */
  readonly register: () => AgentMessageInit;
  /** Every message after Registered; `send` queues one up (LLMGW_STREAM_CLOSED once the stream is gone). */
  readonly onMessage: (msg: ControlMessage, send: (msg: AgentMessageInit) => void) => void;
}

export function agentSession(options: AgentSessionOptions): ReconnectOptions['session'] {
  return async (accepted, signal) => {
    const out = new PushQueue<AgentMessageInit>();
    out.push(options.register());
    const send = (msg: AgentMessageInit): void => out.push(msg);
    try {
      for await (const msg of options.client.open(out, signal)) {
        if (msg.body.case === 'registered') accepted();
        else options.onMessage(msg, send);
      }
    } finally {
      out.end();
    }
  };
}
