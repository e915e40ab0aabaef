import type { IncomingMessage, ServerResponse } from 'node:http';
import type { LlmgwError } from '../errors.js';
import type { UsageRecord } from '../messages/accounting.js';
import type { Permit } from '../router/admission/admission.js';
import type { Tenant } from './tenant.js';
import type { Profile } from '../router/scheduler/types.js';
import type { AttemptPlan } from './attempt-plan.js';
import type { ModelRoute } from './model-routes.js';

/** The inference paths of the OpenAI API that llmgw serves. */
export type InferencePath = '/v1/chat/completions' | '/v1/completions' | '/v1/embeddings';

/**
 * One request on its way through the stages (`pipeline.ts`). Each stage fills in what
 * the later ones read; a field is meaningful once the stage that sets it has run.
 */
export interface RequestContext {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly path: InferencePath;
  /** performance.now() at arrival. */
  readonly arrived: number;
  /** The request's usage record: filled in on the way, sent once by the account stage. */
  readonly record: UsageRecord;
  /** parse: the body as received; empty once the body was edited and must be re-serialised. */
  raw: Buffer;
  /** parse: the body as a JSON object. */
  body: Record<string, unknown>;
  /** The prompt as text, built once when first asked for (prompt.ts `promptOf`); undefined until then. */
  prompt?: string | null;
  /** parse: the client asked for server-sent events. */
  stream: boolean;
  /** resolve: the catalog's model and everything decided for it at config load. */
  route: ModelRoute;
  /** resolve: the routing profile. */
  profile: Profile;
  /** resolve: the usage-only chunk is dropped (the router asked for it, not the client). */
  stripUsage: boolean;
  /** resolve: the client wants its answer whole and the engine is asked to stream it (`streamed-answer.ts`). */
  collect: boolean;
  /** resolve: admission band index, -1 when admission is off for the model. */
  band: number;
  /** admit: the request's share of capacity, null when admission is off. */
  permit: Permit | null;
  /** admit: prefill pacing takes an engine of the model to hold the prompt's head (it counts only the rest). */
  headCached: boolean;
  /**
   * admit: queues the request again after an engine gave it back (`Admission.makeWay`),
   * with `permit` replaced once it is released; false when it will not be sent (its
   * client left, or the queue refused it and answered). Null when admission is off.
   */
  readmit: (() => Promise<boolean>) | null;
  /** schedule: chained block hashes of the prompt's head, or null. */
  prefix: Float64Array | null;
  /** schedule: session key, or null. */
  session: string | null;
  /** schedule: which endpoint each attempt goes to, and when to stop. */
  plan: AttemptPlan;
  /** authenticate: the key and what it holds on its chain; null with tenancy off, or before its key is known. */
  tenant: Tenant | null;
  /** The record is in the usage journal (tenancy on): written once, before the last byte where the request was served. */
  billed: boolean;
  /** forward: ends the relay now with an error (shutdown); null while no attempt relays. */
  readonly cut: { now: ((error: LlmgwError) => void) | null };
}
