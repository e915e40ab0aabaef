import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { auditPath, levelPath, limitsFromFlags, scopeFromFlags, usagePath } from '../../src/cli/tenancy-argv.js';

const NOW = Date.UTC(2026, 11, 15);
const refused = (f: () => unknown, message: string): void => assert.throws(f, (e: Error) => e.message === message, message);

test('one level flag names the level; none is null; two are refused by name', () => {
  assert.equal(scopeFromFlags({ project: 'chat' }), { scope: 'project', ref: 'chat' });
  assert.is(scopeFromFlags({}), null);
  refused(() => scopeFromFlags({ org: 'acme', key: 'key_1' }), 'give one of --org, --team, --project or --key, not --org and --key');
  refused(() => scopeFromFlags({ team: '' }), '--team must name a team (its name or id)');
  assert.is(levelPath({ scope: 'team', ref: 'ml/ops' }), '/admin/v1/tenancy/limits/team/ml%2Fops');
});

test('limit flags become the body of a set: numbers, none as null, models split on commas', () => {
  assert.equal(limitsFromFlags({ rpm: '60', tpm: 'none', budget: '12.5', period: 'month', models: 'a, b', band: 'batch', profile: 'none' }), {
    rpm: 60,
    tpm: null,
    budget: 12.5,
    period: 'month',
    models: ['a', 'b'],
    band: 'batch',
    profile: null,
  });
  assert.equal(limitsFromFlags({ budget: 'none' }), { budget: null }, 'the server clears the period with the budget');
  assert.equal(limitsFromFlags({ models: 'none' }), { models: null });
  assert.equal(limitsFromFlags({}), {});
});

test('bad limit flags are refused naming the flag and what it takes', () => {
  refused(() => limitsFromFlags({ rpm: '-1' }), "--rpm must be a whole number, or none to clear it, not '-1'");
  refused(() => limitsFromFlags({ tpm: '1e3' }), "--tpm must be a whole number, or none to clear it, not '1e3'");
  refused(() => limitsFromFlags({ budget: 'lots', period: 'day' }), "--budget must be a number of units, or none to clear it, not 'lots'");
  refused(() => limitsFromFlags({ budget: '5' }), '--budget needs --period day|month: the units are spent per day or per month');
  refused(() => limitsFromFlags({ period: 'day' }), '--period needs --budget UNITS (--budget none clears the budget and its period)');
  refused(() => limitsFromFlags({ budget: '5', period: 'week' }), "--period must be day or month, not 'week'");
  refused(() => limitsFromFlags({ models: 'a,,b' }), "--models must be model names separated by commas (a,b), or none for every model, not 'a,,b'");
  refused(() => limitsFromFlags({ band: '' }), '--band must name a band, or be none to clear it');
});

test('usage and audit flags become the query; times are checked here and sent as written', () => {
  assert.is(usagePath({}, NOW), '/admin/v1/tenancy/usage');
  assert.is(usagePath({ by: 'model', since: '24h', until: '2026-12-16', team: 'ml' }, NOW), '/admin/v1/tenancy/usage?by=model&since=24h&until=2026-12-16&of=team%3Aml');
  refused(() => usagePath({ by: 'week' }, NOW), "--by must be one of key, project, team, org, model, not 'week'");
  assert.throws(() => usagePath({ since: 'last week' }, NOW), /^--since must be a date/);
  refused(() => usagePath({ since: '2026-12-02', until: '2026-12-01' }, NOW), '--since (2026-12-02T00:00:00.000Z) must be before --until (2026-12-01T00:00:00.000Z)');
  refused(() => usagePath({ org: 'a', project: 'b' }, NOW), 'give one of --org, --team, --project or --key, not --org and --project');
  assert.is(auditPath({ limit: '20', since: '2026-12-01' }, NOW), '/admin/v1/tenancy/audit?limit=20&since=2026-12-01');
  assert.is(auditPath({}, NOW), '/admin/v1/tenancy/audit');
  refused(() => auditPath({ limit: '0' }, NOW), "--limit must be a whole number of events, 1 or more, not '0'");
});

test.run();
