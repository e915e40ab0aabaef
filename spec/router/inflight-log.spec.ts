import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { InflightLog } from '../../src/router/inflight-log.js';
import { occupancy } from '../../src/router/load-estimate.js';
import { tableOf } from './helpers.js';

test('counts starts and ends at or after a moment, over the last entries it keeps', () => {
  const log = new InflightLog(4);
  for (const t of [10, 20, 30, 40, 50]) log.started(t);
  log.ended(35);
  assert.is(log.startedSince(30), 3);
  assert.is(log.startedSince(0), 4, 'only the last four are kept');
  assert.is(log.endedSince(30), 1);
  assert.is(log.endedSince(36), 0);
});

test('a scrape is lined up with the requests around it: started after it are not in its counts, ended after it still are', () => {
  const { table, eps } = tableOf(1);
  const e = eps[0]!;
  const at = 10_000;
  const start = (t: number): void => {
    e.inflight++;
    e.inflightLog.started(t);
  };
  const end = (t: number): void => {
    e.inflight--;
    e.inflightLog.ended(t);
  };
  // In time order, as the data port records them.
  start(at - 1_000); // long running, in the scrape
  start(at - 800); // ends after the scrape: in it
  start(at - 500); // ended before the scrape: not in it
  end(at - 400);
  start(at - 10); // an instant before: in flight, though the engine had not counted it yet
  start(at + 20); // after
  end(at + 30); // the one from at − 800
  table.apply({ id: e.id, ready: true, reason: null, models: ['m'], maxModelLen: null, at, load: { waiting: 0, running: 2, kvUsage: 0.1 }, loadError: null });
  assert.is(e.inflight, 3);
  assert.is(e.inflightAtLoad, 3, 'the long one, the one that ended later and the one sent an instant before');
  assert.is(occupancy(e, 'idle'), 2, 'the engine as it reported itself: one started and one ended since');
  assert.is(occupancy(e, 'busy'), 3, 'at least the three the router had in flight when it was scraped');
});

test.run();
