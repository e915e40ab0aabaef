// The tenancy routes of the admin port: organizations, teams, projects and keys, their
// limits, usage and the audit trail. Each route is one ask of the store actor. A
// mutation's change is applied to the main thread's directory before the answer goes
// out, so a key that `llmgw ctl keys create` printed works the moment the command returns.
import type { IncomingMessage } from 'node:http';
import { LlmgwError } from '../errors.js';
import { valueOf } from '../messages/agent.js';
import type { ApiKey, AuditEvent, IssuedKey, LimitRow, ScopeKind, TenancyChange, TenancyMsg, UsageRow } from '../messages/tenancy.js';
import { readBody } from '../net/read-body.js';
import type { ActorRef } from '../runtime/index.js';
import {
  auditQuery,
  createKeyBody,
  createOrgBody,
  createProjectBody,
  createTeamBody,
  limitsBody,
  listParent,
  parseJsonObject,
  revokeKeyBody,
  rotateKeyBody,
  scopeOf,
  usageQuery,
} from './tenancy-bodies.js';

export interface TenancyRoutesOptions {
  /** Null when the server keeps no tenancy (no `tenancy.store` in its config). */
  readonly store: ActorRef<TenancyMsg> | null;
  /** Applies a mutation's change to the directory the data port authenticates against. */
  readonly applyChange: (change: TenancyChange) => void;
}

export const TENANCY_OFF = 'tenancy is off on this server: set tenancy.store (the path of its database file) in the server config to keep keys, limits and usage';

/** Admin bodies are a few fields; anything near this is a mistake. */
export const TENANCY_BODY_BYTES = 64 * 1024;

const PREFIX = '/admin/v1/tenancy/';
const COLLECTIONS: Readonly<Record<string, ScopeKind>> = { orgs: 'org', teams: 'team', projects: 'project', keys: 'key' };

/** A tenancy request as its method and path name it; `kind` is the discriminant. */
export type TenancyRoute =
  | { readonly kind: 'list'; readonly entity: ScopeKind }
  | { readonly kind: 'create'; readonly entity: ScopeKind }
  | { readonly kind: 'show'; readonly entity: ScopeKind; readonly ref: string }
  | { readonly kind: 'revoke'; readonly key: string }
  | { readonly kind: 'rotate'; readonly key: string }
  | { readonly kind: 'limits'; readonly scope: ScopeKind | null; readonly ref: string | null }
  | { readonly kind: 'set-limits'; readonly scope: ScopeKind; readonly ref: string }
  | { readonly kind: 'clear-limits'; readonly scope: ScopeKind; readonly ref: string }
  | { readonly kind: 'usage' }
  | { readonly kind: 'audit' };

/** A tenancy route; a tenancy path asked with a method it does not take (`allow`); or no tenancy path. */
export type TenancyMatch = { readonly route: TenancyRoute } | { readonly allow: string } | null;

/** The answer to DELETE limits/{scope}/{ref}. */
export interface LimitsCleared {
  scope: ScopeKind;
  ref: string;
  cleared: true;
}

/** An API key as the admin API shows it: without its hash, which only authentication needs. */
export type KeyView = Omit<ApiKey, 'hash'>;

/** Which tenancy route `method` and `pathname` (still percent-encoded) ask for. */
export function matchTenancyRoute(method: string, pathname: string): TenancyMatch {
  if (!pathname.startsWith(PREFIX)) return null;
  const parts = pathname.slice(PREFIX.length).split('/');
  if (parts.some((p) => p === '')) return null;
  const by = (table: Readonly<Record<string, () => TenancyRoute>>): TenancyMatch => {
    const make = table[method];
    return make ? { route: make() } : { allow: Object.keys(table).join(', ') };
  };
  const [first, second, third] = parts;
  const entity = COLLECTIONS[first!];
  if (entity !== undefined) {
    if (parts.length === 1) return by({ GET: () => ({ kind: 'list', entity }), POST: () => ({ kind: 'create', entity }) });
    if (parts.length === 2) return by({ GET: () => ({ kind: 'show', entity, ref: segment(second!) }) });
    if (parts.length === 3 && entity === 'key' && (third === 'revoke' || third === 'rotate')) {
      const action = third;
      return by({ POST: () => ({ kind: action, key: segment(second!) }) });
    }
    return null;
  }
  if (first === 'limits') {
    if (parts.length === 1) return by({ GET: () => ({ kind: 'limits', scope: null, ref: null }) });
    if (parts.length !== 3) return null;
    const scope = scopeOf(segment(second!), `the scope in ${PREFIX}limits/{scope}/{ref}`);
    const ref = segment(third!);
    const set = (): TenancyRoute => ({ kind: 'set-limits', scope, ref });
    return by({ GET: () => ({ kind: 'limits', scope, ref }), PUT: set, POST: set, DELETE: () => ({ kind: 'clear-limits', scope, ref }) });
  }
  if (parts.length === 1 && first === 'usage') return by({ GET: () => ({ kind: 'usage' }) });
  if (parts.length === 1 && first === 'audit') return by({ GET: () => ({ kind: 'audit' }) });
  return null;
}

/** Who asked, for the audit trail: the client's `x-llmgw-actor`, else its address. */
export function actorOf(req: IncomingMessage): string {
  const stated = req.headers['x-llmgw-actor'];
  if (typeof stated === 'string' && stated.trim() !== '') return stated.trim().slice(0, 200);
  return req.socket.remoteAddress ?? 'unknown';
}

/** Answers `route`: the JSON body of a 200, or throws the LlmgwError to send. */
export async function serveTenancy(route: TenancyRoute, req: IncomingMessage, query: URLSearchParams, opts: TenancyRoutesOptions): Promise<unknown> {
  const store = opts.store;
  if (store === null) {
    req.resume();
    throw new LlmgwError('LLMGW_TENANCY_OFF', TENANCY_OFF);
  }
  const actor = actorOf(req);
  const now = Date.now();
  const applied = <T extends { change: TenancyChange }>(answer: T): T => {
    opts.applyChange(answer.change);
    return answer;
  };
  switch (route.kind) {
    case 'list': {
      req.resume();
      const rows = valueOf(await store.ask({ type: 'list', kind: route.entity, parent: listParent(route.entity, query) }));
      return route.entity === 'key' ? rows.map((r) => keyView(r as ApiKey)) : rows;
    }
    case 'show': {
      req.resume();
      const { entity, limits } = valueOf(await store.ask({ type: 'show', kind: route.entity, ref: route.ref }));
      return { entity: route.entity === 'key' ? keyView(entity as ApiKey) : entity, limits };
    }
    case 'create':
      return create(route.entity, await jsonBody(req), store, actor, now, applied);
    case 'revoke': {
      revokeKeyBody(await jsonBody(req));
      return keyView(applied(valueOf(await store.ask({ type: 'revoke-key', key: route.key, actor }))).key);
    }
    case 'rotate': {
      const { graceMs } = rotateKeyBody(await jsonBody(req));
      const answer = applied(valueOf(await store.ask({ type: 'rotate-key', key: route.key, graceMs, actor })));
      return { issued: issuedView(answer.issued), old: keyView(answer.old) };
    }
    case 'limits':
      req.resume();
      return valueOf(await store.ask({ type: 'limits', scope: route.scope, ref: route.ref })) satisfies LimitRow[];
    case 'set-limits': {
      const limits = limitsBody(await jsonBody(req));
      return applied(valueOf(await store.ask({ type: 'set-limits', scope: route.scope, ref: route.ref, limits, clear: false, actor }))).row;
    }
    case 'clear-limits': {
      req.resume();
      applied(valueOf(await store.ask({ type: 'set-limits', scope: route.scope, ref: route.ref, limits: {}, clear: true, actor })));
      return { scope: route.scope, ref: route.ref, cleared: true } satisfies LimitsCleared;
    }
    case 'usage':
      req.resume();
      return valueOf(await store.ask({ type: 'usage', query: usageQuery(query, now) })) satisfies UsageRow[];
    case 'audit':
      req.resume();
      return (await store.ask({ type: 'audit', ...auditQuery(query, now) })) satisfies AuditEvent[];
  }
}

function create(
  entity: ScopeKind,
  body: Record<string, unknown>,
  store: ActorRef<TenancyMsg>,
  actor: string,
  now: number,
  applied: <T extends { change: TenancyChange }>(answer: T) => T,
): Promise<unknown> {
  switch (entity) {
    case 'org':
      return store.ask({ type: 'create-org', ...createOrgBody(body), actor }).then((a) => applied(valueOf(a)).org);
    case 'team':
      return store.ask({ type: 'create-team', ...createTeamBody(body), actor }).then((a) => applied(valueOf(a)).team);
    case 'project':
      return store.ask({ type: 'create-project', ...createProjectBody(body), actor }).then((a) => applied(valueOf(a)).project);
    case 'key':
      return store.ask({ type: 'create-key', ...createKeyBody(body, now), actor }).then((a) => issuedView(applied(valueOf(a)).issued));
  }
}

export function keyView(k: ApiKey): KeyView {
  const { hash: _hash, ...view } = k;
  return view;
}

/** A created or rotated key: its text (shown this once) and its record without the hash. */
export interface IssuedKeyView {
  key: string;
  record: KeyView;
}

function issuedView(i: IssuedKey): IssuedKeyView {
  return { key: i.key, record: keyView(i.record) };
}

async function jsonBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  let raw: Buffer;
  try {
    raw = await readBody(req, TENANCY_BODY_BYTES);
  } catch (err) {
    const e = LlmgwError.from(err);
    if (e.code !== 'LLMGW_BODY_TOO_LARGE') throw e;
    throw new LlmgwError('LLMGW_BODY_TOO_LARGE', `an admin request body may have at most ${TENANCY_BODY_BYTES} bytes`, { limit: TENANCY_BODY_BYTES });
  }
  return parseJsonObject(raw.toString('utf8'));
}

function segment(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new LlmgwError('LLMGW_INVALID_REQUEST', `'${raw}' in the path is not valid percent-encoding`);
  }
}
