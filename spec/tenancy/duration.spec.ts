import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { parseDuration, parseInstant } from '../../src/tenancy/duration.js';

const NOW = Date.UTC(2026, 11, 15, 12, 0, 0);

test('a duration is a whole number and one unit', () => {
  assert.is(parseDuration('90s', '--grace'), 90_000);
  assert.is(parseDuration('15m', '--grace'), 900_000);
  assert.is(parseDuration('24h', '--grace'), 86_400_000);
  assert.is(parseDuration('30d', '--grace'), 30 * 86_400_000);
  assert.is(parseDuration('2w', '--grace'), 14 * 86_400_000);
  assert.is(parseDuration('0s', '--grace'), 0);
  for (const bad of ['', '24', 'h', '1.5h', '-1d', '1y', '1h30m', ' 1h', '30D']) {
    assert.throws(() => parseDuration(bad, '--expires-in'), (e: Error) => e.message === `--expires-in must be a duration, a whole number and a unit: 90s, 15m, 24h, 30d or 2w; not '${bad}'`, bad);
  }
});

test('an instant is a UTC date, a date-time with its zone, epoch ms, or a duration before now', () => {
  assert.is(parseInstant('2026-12-01', '--since', NOW), Date.UTC(2026, 11, 1));
  assert.is(parseInstant('2026-12-01T08:30Z', '--since', NOW), Date.UTC(2026, 11, 1, 8, 30));
  assert.is(parseInstant('2026-12-01T08:30:00+02:00', '--since', NOW), Date.UTC(2026, 11, 1, 6, 30));
  assert.is(parseInstant('1764547200000', '--since', NOW), 1764547200000);
  assert.is(parseInstant('24h', '--since', NOW), NOW - 86_400_000);
  for (const bad of ['yesterday', '2026-02-31', '2026-13-01', '2026-12-01T08:30', '12/01/2026', '123']) {
    assert.throws(() => parseInstant(bad, '--until', NOW), (e: Error) => e.message.startsWith('--until must be a date (2026-12-01)') && e.message.endsWith(`not '${bad}'`), bad);
  }
});

test.run();
