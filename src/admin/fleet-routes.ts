// The fleet's routes of the admin port: what the control plane knows of nodes, models,
// replicas and placement, and the operator's commands to it. Each route is one ask of
// the control actor; a refusal it answers (`Outcome`) becomes the HTTP error of its code.
import { LlmgwError } from '../errors.js';
import { valueOf } from '../messages/agent.js';
import type { ControlMsg } from '../messages/control.js';
import type { ActorRef } from '../runtime/index.js';
import type { ReloadResult } from './reload-result.js';

export interface FleetRoutesOptions {
  /** Null when the server runs no control plane (no model of its config has profiles). */
  readonly control: ActorRef<ControlMsg> | null;
  /**
   * Reads the config file again and applies it. Resolves with the problems of a file that
   * cannot be read or is invalid; rejects only for a failure of the server itself.
   */
  readonly reload: (() => Promise<ReloadResult>) | undefined;
}

export const NODE_ACTIONS = ['cordon', 'uncordon', 'drain'] as const;
export type NodeAction = (typeof NODE_ACTIONS)[number];

/** A fleet request as its method and path name it; `kind` is the discriminant. */
export type FleetRoute =
  | { readonly kind: 'nodes' }
  | { readonly kind: 'models' }
  | { readonly kind: 'replicas' }
  | { readonly kind: 'explain'; readonly model: string }
  | { readonly kind: 'node-action'; readonly action: NodeAction; readonly node: string }
  | { readonly kind: 'logs'; readonly target: string }
  | { readonly kind: 'reload' };

/** A fleet route; a fleet path asked with another method than the one it takes (`allow`); or no fleet path. */
export type FleetMatch = { readonly route: FleetRoute } | { readonly allow: 'GET' | 'POST' } | null;

const PREFIX = '/admin/v1/';
export const DEFAULT_LOG_LINES = 100;
const MAX_LOG_LINES = 10_000;
/** Logs are read from the node's agent over its stream: a round trip more than the other asks. */
const LOGS_ASK_TIMEOUT_MS = 15_000;

export const NO_CONTROL_PLANE = 'this server runs no control plane: no model in the config has profiles';

/** Which fleet route `method` and `pathname` (still percent-encoded) ask for. */
export function matchFleetRoute(method: string, pathname: string): FleetMatch {
  if (!pathname.startsWith(PREFIX)) return null;
  const parts = pathname.slice(PREFIX.length).split('/');
  if (parts.some((p) => p === '')) return null;
  const on = (allow: 'GET' | 'POST', route: () => FleetRoute): FleetMatch => (method === allow ? { route: route() } : { allow });
  const [first, second, third] = parts;
  switch (parts.length === 1 ? first : `${first}/`) {
    case 'nodes':
    case 'models':
    case 'replicas':
      return on('GET', () => ({ kind: first as 'nodes' | 'models' | 'replicas' }));
    case 'reload':
      return on('POST', () => ({ kind: 'reload' }));
    case 'placement/':
      return parts.length === 2 ? on('GET', () => ({ kind: 'explain', model: segment(second!) })) : null;
    case 'logs/':
      return parts.length === 2 ? on('GET', () => ({ kind: 'logs', target: segment(second!) })) : null;
    case 'nodes/': {
      if (parts.length !== 3) return null;
      const action = segment(third!);
      if (!(NODE_ACTIONS as readonly string[]).includes(action)) {
        throw new LlmgwError('LLMGW_NOT_FOUND', `no node action '${action}': the actions are ${NODE_ACTIONS.join(', ')} (POST ${PREFIX}nodes/{name}/{action})`);
      }
      return on('POST', () => ({ kind: 'node-action', action: action as NodeAction, node: segment(second!) }));
    }
    default:
      return null;
  }
}

/** Answers `route`: the JSON body of a 200, or throws the LlmgwError to send. */
export async function serveFleet(route: FleetRoute, query: URLSearchParams, opts: FleetRoutesOptions): Promise<unknown> {
  if (route.kind === 'reload') {
    if (opts.reload === undefined) throw new LlmgwError('LLMGW_NOT_FOUND', 'this server does not reload its config while it runs');
    return opts.reload();
  }
  const control = opts.control;
  if (control === null) throw new LlmgwError('LLMGW_NO_CONTROL_PLANE', NO_CONTROL_PLANE);
  switch (route.kind) {
    case 'nodes':
      return control.ask({ type: 'nodes' });
    case 'models':
      return control.ask({ type: 'models' });
    case 'replicas': {
      const model = query.get('model');
      if (model === '') throw new LlmgwError('LLMGW_INVALID_REQUEST', 'model must name a model (?model=NAME), or be left out for every model');
      return control.ask(model === null ? { type: 'replicas' } : { type: 'replicas', model });
    }
    case 'explain':
      return valueOf(await control.ask({ type: 'explain', model: route.model }));
    case 'node-action':
      return valueOf(await control.ask({ type: route.action, node: route.node }));
    case 'logs':
      return valueOf(await control.ask({ type: 'logs', target: route.target, lines: logLines(query.get('tail')) }, { timeoutMs: LOGS_ASK_TIMEOUT_MS }));
  }
}

/** `?tail=N`: how many of the last lines of each shard's output. */
export function logLines(tail: string | null): number {
  if (tail === null) return DEFAULT_LOG_LINES;
  const n = /^\d+$/.test(tail) ? Number(tail) : NaN;
  if (!(n >= 1 && n <= MAX_LOG_LINES)) throw new LlmgwError('LLMGW_INVALID_REQUEST', `tail must be a whole number from 1 to ${MAX_LOG_LINES}, not '${tail}'`);
  return n;
}

function segment(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new LlmgwError('LLMGW_INVALID_REQUEST', `'${raw}' in the path is not valid percent-encoding`);
  }
}
