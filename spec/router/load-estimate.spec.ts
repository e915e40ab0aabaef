import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { freeSlots, saturation } from '../../src/router/admission/saturation.js';
import { batchSlots, kvSlots } from '../../src/router/load-estimate.js';
import { keepMostRoom } from '../../src/router/scheduler/most-room.js';
import { ADMISSION, tableOf } from './helpers.js';

const NOW = 1_000_000;
const FIRST = { inTransit: 0, first: true, slowStart: true, limit: 4, gateMs: Infinity };
const RESERVE = { ...ADMISSION, reserved_share: 0.1 };

test('kvSlots: the requests the KV cache holds at the footprint of those running when scraped', () => {
  assert.is(kvSlots(null), Infinity, 'never scraped');
  assert.is(kvSlots({ running: 10, waiting: 0, kvUsage: null }), Infinity, 'usage not published');
  assert.is(kvSlots({ running: 0, waiting: 0, kvUsage: 0 }), Infinity, 'nothing running: no footprint');
  assert.is(kvSlots({ running: 10, waiting: 0, kvUsage: 0.25 }), 40);
  assert.is(kvSlots({ running: 25, waiting: 30, kvUsage: 0.98 }), 25, 'full: what it runs');
  assert.is(kvSlots({ running: 1, waiting: 3, kvUsage: 1 }), 1, 'one long context fills it');
});

test('batchSlots: the batch capacity, or fewer where the KV cache binds first; the fallback where the capacity is unknown', () => {
  const { eps: [e] } = tableOf(1, () => ({ batchCapacity: 64, load: { running: 25, waiting: 30, kvUsage: 0.98 } }));
  assert.is(batchSlots(e!), 25);
  e!.load = { running: 16, waiting: 0, kvUsage: 0.05 };
  assert.is(batchSlots(e!), 64, 'short requests: max_num_seqs binds');
  e!.batchCapacity = null;
  assert.is(batchSlots(e!), null);
  assert.is(batchSlots(e!, 12), 12);
  e!.load = { running: 4, waiting: 0, kvUsage: 0.5 };
  assert.is(batchSlots(e!, 12), 8);
});

// An engine of max_num_seqs 64 (configured) fed long prompts: its KV cache holds 25 of
// them, it runs 25 and 30 more of ours wait inside it. Counted against 64, a first-band
// request took it for an engine with 9 free slots, went there and waited behind the 30.
test('batch size known, KV cache binding first: a first-band request counts what waits beyond what the cache holds, and lower bands fill only that less the reserve', () => {
  const { eps } = tableOf(1, () => ({ batchCapacity: 64, load: { running: 25, waiting: 30, kvUsage: 0.98 }, loadAt: NOW - 100 }));
  const e = eps[0]!;
  e.inflight = e.inflightAtLoad = 55;
  assert.match(saturation(eps, RESERVE, NOW, 5_000, FIRST) ?? '', /30 waiting in the engines of 1 replicas/);
  assert.is(freeSlots(e, RESERVE, true, 4), 0, 'no room for a lower band');
  e.load = { running: 20, waiting: 0, kvUsage: 0.8 };
  e.inflight = e.inflightAtLoad = 20;
  assert.is(freeSlots(e, RESERVE, true, 4), 2, '25 the cache holds, less 3 reserved, less 20 held');
});

test('the first band goes where the room is, counted against what the KV cache holds', () => {
  const { eps } = tableOf(2, (i) => (i === 0 ? { batchCapacity: 64, load: { running: 20, waiting: 0, kvUsage: 0.8 }, inflight: 20 } : { batchCapacity: 16, load: { running: 10, waiting: 0, kvUsage: 0.1 }, inflight: 10 }));
  const cands = [...eps];
  keepMostRoom(cands, { unknownCapacity: null });
  assert.equal(cands, [eps[1]], 'the engine of 16 has 6 free; the engine of 64 has 5 by its cache, not 44');
});

test.run();
