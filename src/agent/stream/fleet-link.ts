// The agent's membership of the fleet: one stream to the control plane, kept up by
// reconnectForever. Every stream opens with a Register holding the node's inventory and
// every shard it runs, so nothing sent on an earlier stream has to survive a reconnect;
// then a Heartbeat every interval, a ShardStatus for every shard transition, and the
// answers to the control plane's commands, which go to the supervisor.
//
// No actor code here: the shell (src/actors/agent/fleet-link-actor.ts) hands in the
// supervisor as a ShardPort and the discovery as a function, and feeds shard events in.
import { create } from '@bufbuild/protobuf';
import type { Logger } from '../../log.js';
import { LlmgwError } from '../../errors.js';
import type { Outcome, ShardEvent, ShardStatus, StartShardReply } from '../../messages/agent.js';
import { AgentMessageSchema, type AgentMessage, type ControlMessage, type ShardSpec as WireShardSpec } from '../../messages/gen/llmgw/agent/v1/agent_pb.js';
import type { ShardSpec } from '../../messages/shard-spec.js';
import { shardSpecFromWire } from '../../messages/shard-spec-wire.js';
import { shardStatusToWire } from '../../messages/shard-status-wire.js';
import { PushQueue } from '../../net/push-queue.js';
import type { Inventory } from '../discovery/inventory.js';
import type { AgentStreamClient } from './agent-stream-client.js';
import type { BackoffPolicy } from './backoff.js';
import { reconnectForever } from './reconnect.js';
import { registerMessage } from './register-message.js';

/** The supervisor, as the link uses it. */
export interface ShardPort {
  list(): Promise<ShardStatus[]>;
  start(id: string, spec: ShardSpec): Promise<Outcome<StartShardReply>>;
  stop(id: string): Promise<Outcome<ShardStatus>>;
  output(id: string, lines: number): Promise<Outcome<string[]>>;
}

export interface FleetLinkOptions {
  readonly client: AgentStreamClient;
  readonly nodeId: string;
  readonly hostname: string;
  /** The management address: reported in the Register, and where engines bind unless told otherwise. */
  readonly mgmtAddr: string;
  /** The interface it is on, reported so the control plane can give multi-node shards their NCCL interface. */
  readonly mgmtInterface: string;
  readonly agentVersion: string;
  readonly shards: ShardPort;
  /** A fresh inventory for each Register; `running` lets it count the engines' GPU memory as ours. */
  readonly discover: (running: readonly ShardStatus[]) => Promise<Inventory>;
  readonly heartbeatIntervalMs: number;
  /** Most messages waiting for the stream; past it the stream is cut and the next Register resynchronises. */
  readonly queueLimit?: number;
  readonly policy?: BackoffPolicy;
  readonly log: Logger;
  readonly now?: () => number;
}

interface Session {
  readonly out: PushQueue<AgentMessage>;
  /** Statuses from before the Register was queued: sent right after it. */
  readonly early: AgentMessage[];
  registered: boolean;
  readonly cut: AbortController;
}

const DEFAULT_QUEUE_LIMIT = 1_024; // minutes of a busy node's transitions; a stream this far behind is dead

export class FleetLink {
  private session: Session | null = null;
  /** The last status reported per shard: an event carries the transition, this the rest (spec, adoption). */
  private readonly known = new Map<string, ShardStatus>();
  /** Commands run one after another, in the order they arrived: a Stop after a Start finds the shard. */
  private commands: Promise<void> = Promise.resolve();
  private readonly now: () => number;
  private readonly limit: number;

  constructor(private readonly opts: FleetLinkOptions) {
    this.now = opts.now ?? Date.now;
    this.limit = opts.queueLimit ?? DEFAULT_QUEUE_LIMIT;
  }

  /** Keeps a stream up until `signal` aborts; never rejects. */
  async run(signal: AbortSignal): Promise<void> {
    await reconnectForever({
      session: (accepted, s) => this.runSession(accepted, s),
      signal,
      ...(this.opts.policy && { policy: this.opts.policy }),
      onRetry: (r) => this.opts.log.warn('stream to the control plane ended; reconnecting', { attempt: r.attempt, delayMs: r.delayMs, error: r.error === undefined ? undefined : LlmgwError.from(r.error).message }),
    });
    await this.commands;
  }

  /** A transition from the supervisor, reported on the stream if one is open. */
  shardEvent(event: ShardEvent): void {
    const status = this.statusFromEvent(event);
    if (event.state === 'stopped') this.known.delete(event.id);
    else this.known.set(event.id, status);
    this.send(statusMessage(status));
  }

  private statusFromEvent(e: ShardEvent): ShardStatus {
    const last = this.known.get(e.id);
    return { id: e.id, spec: last?.spec ?? null, state: e.state, since: e.at, reason: e.reason, tail: e.tail, adopted: last?.adopted ?? false, processes: last?.processes ?? [] };
  }

  private async runSession(accepted: () => void, outer: AbortSignal): Promise<void> {
    const cut = new AbortController();
    const session: Session = { out: new PushQueue(), early: [], registered: false, cut };
    // Open before the list is read: a transition from here on is queued behind the Register, never lost between the two.
    this.session = session;
    let heartbeat: NodeJS.Timeout | undefined;
    try {
      const running = await this.opts.shards.list();
      for (const s of running) this.known.set(s.id, s);
      const inventory = await this.opts.discover(running);
      session.out.push(
        registerMessage({ nodeId: this.opts.nodeId, hostname: this.opts.hostname, mgmtIp: this.opts.mgmtAddr, mgmtInterface: this.opts.mgmtInterface, agentVersion: this.opts.agentVersion, inventory, engineVersions: {}, running }),
      );
      for (const m of session.early.splice(0)) session.out.push(m);
      session.registered = true;
      heartbeat = setInterval(() => this.send(create(AgentMessageSchema, { body: { case: 'heartbeat', value: { unixMs: BigInt(this.now()) } } })), this.opts.heartbeatIntervalMs);
      for await (const msg of this.opts.client.open(session.out, AbortSignal.any([outer, cut.signal]))) {
        if (msg.body.case === 'registered') {
          this.opts.log.info('registered with the control plane', { nodeId: msg.body.value.nodeId, shards: running.length });
          accepted();
        } else this.command(msg);
      }
    } finally {
      clearInterval(heartbeat);
      session.out.end();
      if (this.session === session) this.session = null;
    }
  }

  /** Queues a message on the open stream; with none open it is dropped, as the next Register carries the state. */
  private send(msg: AgentMessage): void {
    const s = this.session;
    if (s === null || !s.out.open) return;
    const pending = s.registered ? s.out.size : s.early.length;
    if (pending >= this.limit) {
      this.opts.log.warn('the control plane is not reading the stream; cutting it so that a new Register carries the state', { queued: pending });
      s.out.end();
      s.cut.abort();
      return;
    }
    if (s.registered) s.out.push(msg);
    else s.early.push(msg);
  }

  private command(msg: ControlMessage): void {
    this.commands = this.commands.then(() =>
      this.handle(msg).catch((err: unknown) => this.opts.log.error('a control plane command failed', { command: msg.body.case, error: LlmgwError.from(err).message })),
    );
  }

  private async handle(msg: ControlMessage): Promise<void> {
    const b = msg.body;
    switch (b.case) {
      case 'startShard':
        return this.start(b.value.shardId, b.value.spec);
      case 'stopShard':
      case 'drainShard':
        // The supervisor drains a ready shard before signalling it, within its own drain_grace_ms.
        return this.stop(b.value.shardId);
      case 'requestShardOutput': {
        const { requestId, shardId, lines } = b.value;
        const out = await this.opts.shards.output(shardId, lines);
        this.send(create(AgentMessageSchema, { body: { case: 'shardOutput', value: out.ok ? { requestId, shardId, lines: out.value } : { requestId, shardId, error: out.error.message } } }));
        return;
      }
      case 'registered':
      case undefined:
        return;
    }
  }

  private async start(id: string, wire: WireShardSpec | undefined): Promise<void> {
    let spec: ShardSpec | null = null;
    const refused = (reason: string): void =>
      this.send(statusMessage({ id, spec, state: 'failed', since: this.now(), reason, tail: null, adopted: false, processes: [] }));
    try {
      if (wire === undefined) return refused('StartShard carries no spec');
      const fromWire = shardSpecFromWire(wire);
      // Engines bind the management address unless the control plane said otherwise.
      spec = fromWire.httpHost === undefined ? { ...fromWire, httpHost: this.opts.mgmtAddr } : fromWire;
    } catch (err) {
      return refused(LlmgwError.from(err).message);
    }
    const out = await this.opts.shards.start(id, spec);
    if (!out.ok) return refused(out.error.message);
    this.known.set(id, out.value.status);
    this.send(statusMessage(out.value.status));
  }

  private async stop(id: string): Promise<void> {
    const out = await this.opts.shards.stop(id);
    if (out.ok) {
      const s = out.value;
      // A failed shard is forgotten by the stop: for the control plane it is gone.
      const status: ShardStatus = s.state === 'failed' ? { ...s, state: 'stopped', since: this.now() } : s;
      if (status.state === 'stopped') this.known.delete(id);
      this.send(statusMessage(status));
      return;
    }
    if (out.error.code !== 'LLMGW_NOT_FOUND') throw LlmgwError.deserialize(out.error);
    // Unknown here: STOPPED lets the control plane let go of it instead of asking forever.
    this.known.delete(id);
    this.send(statusMessage({ id, spec: null, state: 'stopped', since: this.now(), reason: out.error.message, tail: null, adopted: false, processes: [] }));
  }
}

function statusMessage(status: ShardStatus): AgentMessage {
  return create(AgentMessageSchema, { body: { case: 'shardStatus', value: shardStatusToWire(status) } });
}
