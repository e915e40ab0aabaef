import { hash as digest } from 'node:crypto';
import type { ApiKey, KeySpend, Limits, Org, Project, Team, TenancyChange, TenancySnapshot } from '../messages/tenancy.js';
import { resolveLimits, type EffectiveLimits } from './limits.js';

// The main thread's copy of the tenancy tree, built from the store's snapshot and kept
// current by the changes its mutations return. The request path asks it one thing per
// request, `authenticate`: one sha256 and one Map lookup, the chain's limits resolved
// once per key and cached until the next change (a change is rare, a request is not).

/** A key that works, with its chain and the limits it is held to. */
export interface KeyView {
  key: ApiKey;
  project: Project;
  team: Team;
  org: Org;
  limits: EffectiveLimits;
}

/** Why a key was refused. */
export type AuthFailure = 'unknown' | 'revoked' | 'expired';

export class Directory {
  private readonly orgs = new Map<string, Org>();
  private readonly teams = new Map<string, Team>();
  private readonly projects = new Map<string, Project>();
  /** By id, and by hash: the one lookup a request makes. */
  private readonly keys = new Map<string, ApiKey>();
  private readonly byHash = new Map<string, ApiKey>();
  /** Limits by the id of the level that sets them (ids are unique across kinds: `org_`, `team_` …). */
  private readonly limits = new Map<string, Limits>();
  private readonly views = new Map<string, KeyView>();
  /** Units spent per key in the current periods when the snapshot was taken. */
  readonly spend: readonly KeySpend[];

  /** `bands`: the admission bands, most urgent first (`router.admission.bands`). */
  constructor(
    snapshot: TenancySnapshot,
    private readonly bands: readonly string[],
  ) {
    this.spend = snapshot.spend;
    this.apply(snapshot);
  }

  /** Applies what a mutation changed. Every cached view is dropped: any change may alter any chain. */
  apply(change: TenancyChange): void {
    for (const o of change.orgs ?? []) this.orgs.set(o.id, o);
    for (const t of change.teams ?? []) this.teams.set(t.id, t);
    for (const p of change.projects ?? []) this.projects.set(p.id, p);
    for (const k of change.keys ?? []) {
      const old = this.keys.get(k.id);
      if (old && old.hash !== k.hash) this.byHash.delete(old.hash);
      this.keys.set(k.id, k);
      this.byHash.set(k.hash, k);
    }
    for (const r of change.limits ?? []) this.limits.set(r.scopeId, { rpm: r.rpm, tpm: r.tpm, budget: r.budget, period: r.period, models: r.models, band: r.band, profile: r.profile });
    for (const c of change.clearedLimits ?? []) this.limits.delete(c.scopeId);
    this.views.clear();
  }

  /** The key `text` names, if it works at `now` (wall-clock ms). */
  authenticate(text: string, now: number): KeyView | AuthFailure {
    // crypto.hash: one call, no Hash object; a third of createHash's cost per key.
    const hash = digest('sha256', text, 'hex');
    const cached = this.views.get(hash);
    if (cached) return usable(cached.key, now) ?? cached;
    const key = this.byHash.get(hash);
    if (!key) return 'unknown';
    const view = this.viewOf(key);
    if (!view) return 'unknown'; // a key whose project is not (yet) known cannot be billed
    this.views.set(hash, view);
    return usable(key, now) ?? view;
  }

  /** The ids of a key's chain, innermost first; null for a key this copy does not hold. */
  chainOf(keyId: string): string[] | null {
    const key = this.keys.get(keyId);
    const view = key && this.viewOf(key);
    return view ? [view.key.id, view.project.id, view.team.id, view.org.id] : null;
  }

  private viewOf(key: ApiKey): KeyView | null {
    const project = this.projects.get(key.projectId);
    const team = project && this.teams.get(project.teamId);
    const org = team && this.orgs.get(team.orgId);
    if (!project || !team || !org) return null;
    const at = (scope: 'key' | 'project' | 'team' | 'org', id: string) => ({ scope, id, limits: this.limits.get(id) ?? null });
    const limits = resolveLimits([at('key', key.id), at('project', project.id), at('team', team.id), at('org', org.id)], this.bands);
    return { key, project, team, org, limits };
  }
}

function usable(key: ApiKey, now: number): AuthFailure | null {
  if (key.revokedAt !== null && key.revokedAt <= now) return 'revoked';
  if (key.expiresAt !== null && key.expiresAt <= now) return 'expired';
  return null;
}
