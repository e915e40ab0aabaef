// `npm run bench pick`: one scheduling decision (filter + score + pick) among 8, 64 and
// 256 endpoints, with each routing profile and a warm prefix index — the work the
// data port does on the main thread for every request. Budget: ≤ 20 µs among 64.
import { EndpointTable, type EndpointState } from '../src/router/endpoint-table.js';
import { PrefixIndex } from '../src/router/scheduler/prefix-index.js';
import { buildProfiles } from '../src/router/scheduler/profiles.js';
import { Scheduler } from '../src/router/scheduler/scheduler.js';
import { createScorers } from '../src/router/scheduler/scorers.js';
import type { RouteRequest } from '../src/router/scheduler/types.js';
import { hashPrefix } from '../src/tasks/prefix-hash.js';
import { fmtNum, fmtRatio, fmtRate, measure, printTable, type Case, type Suite, type TableRow } from './harness.js';

const SIZES = [8, 64, 256];
const BLOCK_CHARS = 256;
const PROMPT_CHARS = 8 * 1024; // a system prompt and a few turns: 32 blocks
const BUDGET = { time: 400, maxSamples: 50_000, warmupTime: 100, maxWarmupSamples: 5_000 };

export const suite: Suite = {
  name: 'pick',
  description: 'scheduler decision time among 8/64/256 endpoints, per routing profile (budget: 20 µs among 64)',
  async run() {
    const now = Date.now();
    const index = new PrefixIndex(200_000);
    const profiles = buildProfiles([{ name: 'inflight-only', scorers: { queue: 0, kv: 0, inflight: 1, prefix: 0, session: 0, weight: 0 } }], createScorers({ staleAfterMs: 5_000, kvCeiling: 0.9, prefixIndex: index }));
    const scheduler = new Scheduler();
    const tables: EndpointTable[] = [];
    const cases: Case[] = [];
    // 64 conversations whose prefixes the index has seen, spread over the endpoints.
    const prompts = Array.from({ length: 64 }, (_, i) => hashPrefix({ text: prompt(i), blockChars: BLOCK_CHARS }));

    for (const n of SIZES) {
      const table = new EndpointTable({ connectTimeoutMs: 1_000, health: { cooldownFailures: 2, cooldownMs: 1_000, breakerFailures: 5, openMs: 1_000, maxOpenMs: 1_000 } });
      tables.push(table);
      const eps: EndpointState[] = [];
      for (let i = 0; i < n; i++) {
        const e = table.add({ id: `gpu-node-${i}`, url: `http://10.0.${i >> 8}.${i & 255}:8000`, models: ['m'], weight: 1 + (i % 3), priority: 0, pool: null });
        Object.assign(e, { ready: true, reason: null, inflight: i % 7, load: { waiting: i % 5, running: 8, kvUsage: (i % 10) / 10 }, loadAt: now });
        eps.push(e);
      }
      prompts.forEach((p, i) => index.record(p, eps[i % n]!.id));
      let k = 0;
      const req = (): RouteRequest => ({ model: 'm', prefix: prompts[k++ % prompts.length]!, session: `user-${k % 1000}`, tried: [], now });
      for (const name of ['inflight-only', 'batch', 'chat', 'long-context']) {
        const profile = profiles.get(name)!;
        cases.push({ name: `${name} ${n}`, fn: () => void scheduler.pick(eps, req(), profile), async: false });
      }
    }
    cases.push({ name: 'hash', fn: () => void hashPrefix({ text: prompt(1), blockChars: BLOCK_CHARS }), async: false });
    const m = await measure(BUDGET, cases);
    for (const t of tables) await t.close();

    const rows: TableRow[] = [];
    for (const n of SIZES) {
      rows.push({ section: `${n} endpoints` });
      const base = m.get(`inflight-only ${n}`)!;
      for (const name of ['inflight-only', 'batch', 'chat', 'long-context']) {
        const r = m.get(`${name} ${n}`)!;
        rows.push([`  ${name}`, fmtNum(r.p50Us), fmtNum(r.p99Us), fmtNum(r.meanUs), fmtRate(1e6 / r.meanUs), fmtRatio(r.meanUs / base.meanUs), n === 64 ? (r.p99Us <= 20 ? 'p99 within' : 'p99 OVER') : '']);
      }
    }
    const h = m.get('hash')!;
    rows.push({ section: 'for scale' }, [`  hashPrefix of an ${PROMPT_CHARS / 1024} KB prompt`, fmtNum(h.p50Us), fmtNum(h.p99Us), fmtNum(h.meanUs), fmtRate(1e6 / h.meanUs), '', '']);
    printTable(['profile', 'p50 µs', 'p99 µs', 'mean µs', 'picks/s', '×mean vs inflight-only', '20 µs budget'], rows);
    console.log(
      [
        `Every endpoint ready with a fresh scraped load; a 32-block prefix (${BLOCK_CHARS}-char blocks) per request from 64`,
        'conversations the index has seen, and a session key. inflight-only is the cheapest useful profile: the baseline.',
        'Prefix hashing happens once per request before the pick and is shown apart.',
      ].join('\n'),
    );
  },
};

function prompt(i: number): string {
  const words = ['system', 'you', 'are', 'helpful', 'user', 'asks', 'about', 'kv', 'cache', 'answer', 'briefly', `conversation-${i}`];
  let s = '';
  for (let w = 0; s.length < PROMPT_CHARS; w++) s += words[(w * 7 + (w >> 2)) % words.length] + ' ';
  return s.slice(0, PROMPT_CHARS);
}
