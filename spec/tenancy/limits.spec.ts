// Resolution is the most restrictive rule along key → project → team → org, checked on
// random trees and limits against a brute-force oracle that asks each level separately.
import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { LevelStates } from '../../src/tenancy/level-counters.js';
import type { LimitRow, Limits, ScopeKind, TenancySnapshot } from '../../src/messages/tenancy.js';
import { Directory, type KeyView } from '../../src/tenancy/directory.js';
import { RateLimiter } from '../../src/tenancy/rate-limiter.js';
import { mulberry32 } from '../support/rng.js';
import { keyRecord, NO_LIMITS } from './fixtures.js';

const BANDS = ['platinum', 'gold', 'silver', 'bronze'];
const MODELS = ['a', 'b', 'c', 'd', 'e'];
const PROFILES = ['chat', 'batch', 'long-context'];

function randomTree(rand: () => number): TenancySnapshot {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const maybe = <T>(f: () => T): T | null => (rand() < 0.5 ? f() : null);
  const snap: TenancySnapshot = { orgs: [], teams: [], projects: [], keys: [], limits: [], spend: [] };
  const limitsOf = (scope: ScopeKind, id: string): void => {
    if (rand() < 0.2) return;
    const l: Limits = {
      ...NO_LIMITS,
      rpm: maybe(() => 1 + Math.floor(rand() * 20)),
      tpm: maybe(() => 100 + Math.floor(rand() * 10_000)),
      models: maybe(() => MODELS.filter(() => rand() < 0.6)),
      band: maybe(() => pick(BANDS)),
      profile: maybe(() => pick(PROFILES)),
    };
    snap.limits.push({ scope, scopeId: id, ...l } satisfies LimitRow);
  };
  for (let o = 0; o < 2; o++) {
    snap.orgs.push({ id: `org_${o}`, name: `o${o}`, createdAt: 0 });
    limitsOf('org', `org_${o}`);
    for (let t = 0; t < 2; t++) {
      const team = `team_${o}${t}`;
      snap.teams.push({ id: team, orgId: `org_${o}`, name: team, createdAt: 0 });
      limitsOf('team', team);
      for (let p = 0; p < 2; p++) {
        const proj = `proj_${o}${t}${p}`;
        snap.projects.push({ id: proj, teamId: team, name: proj, createdAt: 0 });
        limitsOf('project', proj);
        for (let k = 0; k < 2; k++) {
          const key = `key_${o}${t}${p}${k}`;
          snap.keys.push(keyRecord(key, proj, `sk-llmgw-${key}`));
          limitsOf('key', key);
        }
      }
    }
  }
  return snap;
}

/** Each level's own limits, innermost first, found by walking the tree the slow way. */
function levelsOf(snap: TenancySnapshot, keyId: string): (Limits | null)[] {
  const key = snap.keys.find((k) => k.id === keyId)!;
  const project = snap.projects.find((p) => p.id === key.projectId)!;
  const team = snap.teams.find((t) => t.id === project.teamId)!;
  return [key.id, project.id, team.id, team.orgId].map((id) => snap.limits.find((l) => l.scopeId === id) ?? null);
}

test('effective limits are the most restrictive along all four levels (random trees vs an oracle)', () => {
  for (let seed = 1; seed <= 200; seed++) {
    const rand = mulberry32(seed);
    const snap = randomTree(rand);
    const d = new Directory(snap, BANDS);
    for (const key of snap.keys) {
      const v = d.authenticate(`sk-llmgw-${key.id}`, 0) as KeyView;
      const levels = levelsOf(snap, key.id);
      const at = `seed ${seed}, ${key.id}`;
      // rpm/tpm: the one value no level's is below.
      for (const f of ['rpm', 'tpm'] as const) {
        const set = levels.map((l) => l?.[f] ?? null).filter((x): x is number => x !== null);
        const expected = set.find((x) => set.every((y) => x <= y)) ?? null;
        assert.is(v.limits[f], expected, `${f} at ${at}`);
      }
      // models: exactly those every level allows.
      const everyAllows = (m: string): boolean => levels.every((l) => !l?.models || l.models.includes(m));
      const allowed = MODELS.filter(everyAllows);
      const noneSet = levels.every((l) => !l?.models);
      if (noneSet) assert.is(v.limits.models, null, `models at ${at}`);
      else assert.equal([...v.limits.models!].sort(), allowed, `models at ${at}`);
      // band: no level sets a less urgent one.
      const bands = levels.map((l) => l?.band ?? null).filter((b): b is string => b !== null);
      const least = bands.find((b) => bands.every((o) => BANDS.indexOf(o) <= BANDS.indexOf(b))) ?? null;
      assert.is(v.limits.band, least, `band at ${at}`);
      // profile: the innermost level that sets one.
      assert.is(v.limits.profile, levels.find((l) => l?.profile)?.profile ?? null, `profile at ${at}`);
    }
  }
});

test('a key gets exactly as many requests at once as the tightest rpm on its chain lets through', () => {
  for (let seed = 1; seed <= 100; seed++) {
    const snap = randomTree(mulberry32(seed));
    const d = new Directory(snap, BANDS);
    const key = snap.keys[seed % snap.keys.length]!;
    const v = d.authenticate(`sk-llmgw-${key.id}`, 0) as KeyView;
    const limiter = new RateLimiter(new LevelStates());
    const tightest = Math.min(...levelsOf(snap, key.id).map((l) => l?.rpm ?? Infinity));
    let passed = 0;
    while (passed <= 25 && limiter.admit(v.limits.levels, 0, 1_000).verdict.ok) passed++;
    assert.is(passed, tightest === Infinity ? 26 : tightest, `seed ${seed}, ${key.id}`);
  }
});

test.run();
