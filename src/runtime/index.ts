// The actor runtime's public surface. Everything else in this folder is internal.
export { defineActor } from './actor.js';
export type { ActorContext, ActorDef, ActorRef, AskOptions, CpuRunner, Handlers, ProtocolOf, SpawnOptions, StopReason } from './actor.js';
export { address } from './protocol.js';
export type { Address, Ask, AskOf, Message, MessageOf, ReplyOf, TellOf } from './protocol.js';
export type { MailboxOptions, OverflowPolicy } from './mailbox.js';
export type { ChildFailure, SupervisionPolicy, SupervisorDecision } from './supervision.js';
export type { ActorStats } from './stats.js';
export { ActorSystem, type ActorSystemOptions, type ThreadSpec } from './system.js';
export { MAIN_THREAD } from './thread-host.js';
