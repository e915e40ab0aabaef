import { test } from '../../support/uvu.js';
import * as assert from 'uvu/assert';
import { AdaptiveLimit } from '../../../src/router/admission/adaptive-limit.js';

test('fast first tokens grow the limit by one each until slow ones come, then by one per round trip, counted in time', () => {
  const l = new AdaptiveLimit();
  assert.is(l.limit, 4, 'a new engine starts small');
  for (let i = 0; i < 12; i++) l.sample(20, i, i, 1_000, true, 1, 1);
  assert.is(l.limit, 16, 'slow start: one more per fast sample');
  l.sample(200, 100, 100, 1_000, true, 1, 1); // queueing inside the engine: ten times the baseline
  l.sample(200, 101, 101, 1_000, true, 1, 1);
  assert.is(l.limit, 12, 'a fifth off (12.8)');
  l.sample(20, 110, 120, 1_000, true, 1, 1);
  assert.is(l.limit, 13, 'a round trip (20 ms, the baseline) and more since the last growth: one more');
  for (let i = 1; i <= 20; i++) l.sample(20, 110 + i, 120 + i, 1_000, true, 1, 1);
  assert.is(l.limit, 14, 'twenty samples 1 ms apart are one round trip: one more');
  l.sample(20, 150, 160, 1_000, true, 1, 1);
  l.sample(20, 170, 180, 1_000, true, 1, 1);
  assert.is(l.limit, 16, 'samples a round trip apart: one more each, however few streamed requests there are');
});

test('in slow start a sample grows the limit by its replica\'s share: each replica\'s samples acknowledge only its own requests', () => {
  const l = new AdaptiveLimit();
  for (let i = 0; i < 12; i++) l.sample(20, i, i, 1_000, true, 1 / 2, 1);
  assert.is(l.limit, 10, 'two replicas: twelve samples over both grow each replica\'s limit by six');
  for (let i = 0; i < 12; i++) l.sample(20, 20 + i, 20 + i, 1_000, true, 1 / 3, 1);
  assert.is(l.limit, 14, 'three: by four');
});

test('an overfilled replica brings the limit down to what its engine ran, never up, never below one', () => {
  const l = new AdaptiveLimit();
  for (let i = 0; i < 28; i++) l.sample(20, i, i, 1_000, true, 1, 1);
  assert.is(l.limit, 32, 'fast samples while recall kept them fast');
  l.overfilled(16);
  assert.is(l.limit, 16);
  l.overfilled(20);
  assert.is(l.limit, 16, 'a replica that ran more is no reason to grow');
  l.overfilled(0);
  assert.is(l.limit, 1);
});

test('one decrease per round trip: slow samples of requests admitted before it do not shrink it again', () => {
  const l = new AdaptiveLimit();
  for (let i = 0; i < 16; i++) l.sample(20, i, i, 1_000, true, 1, 1);
  assert.is(l.limit, 20);
  l.sample(300, 50, 100, 1_000, true, 1, 1);
  l.sample(300, 60, 101, 1_000, true, 1, 1);
  l.sample(300, 99, 102, 1_000, true, 1, 1);
  assert.is(l.limit, 16, 'the requests admitted before the decrease were already in the queue it reacted to');
  l.sample(300, 150, 200, 1_000, true, 1, 1);
  l.sample(300, 160, 201, 1_000, true, 1, 1);
  assert.is(l.limit, 12, 'those admitted after it are news');
  for (let i = 0; i < 50; i++) l.sample(1_000, 300 + i * 10, 301 + i * 10, 1_000, true, 1, 1);
  assert.is(l.limit, 1, 'never below one');
});

test('the baseline is the fastest seen and drifts up only slowly: noise within twice it and 50 ms is not queueing', () => {
  const l = new AdaptiveLimit();
  l.sample(20, 0, 0, 1_000, true, 1, 1);
  l.sample(89, 1, 1, 1_000, true, 1, 1);
  assert.is(l.limit, 6, '89 ms against a 20 ms baseline: within 2× + 50 ms');
  l.sample(91, 2, 2, 1_000, true, 1, 1);
  l.sample(91, 3, 3, 1_000, true, 1, 1);
  assert.is(l.limit, 4, '91 ms: past it');
});

test('a limit the router is nowhere near does not grow: fast samples count only while half of it is in use', () => {
  const l = new AdaptiveLimit();
  for (let i = 0; i < 100; i++) l.sample(20, i, i, 3, true, 1, 1);
  assert.is(l.limit, 7, 'three in flight: grown to just over twice that, no further');
  for (let i = 0; i < 100; i++) l.sample(20, 200 + i, 200 + i, 1, true, 1, 1);
  assert.is(l.limit, 7, 'a quieter spell does not shrink it either');
  l.sample(300, 400, 400, 1, true, 1, 1);
  l.sample(300, 401, 401, 1, true, 1, 1);
  assert.is(l.limit, 5, 'slow samples still do, however little is in flight');
});

test('a slow first token while no lower-band request is in flight cuts nothing and leaves slow start on: the limit governs only them', () => {
  const l = new AdaptiveLimit();
  // An interactive client alone: one slow first token (the host's moment, its own burst).
  l.sample(20, 0, 0, 3, false, 1, 0);
  l.sample(300, 10, 20, 3, false, 1, 0);
  assert.is(l.limit, 4, 'not cut');
  // A batch job arrives: slow start still doubles.
  for (let i = 0; i < 12; i++) l.sample(20, 100 + i, 100 + i, 1_000, true, 1, 8);
  assert.is(l.limit, 16, 'one more per fast sample, as before any slow one');
  l.sample(300, 200, 200, 1_000, true, 1, 8);
  l.sample(300, 201, 201, 1_000, true, 1, 8);
  assert.is(l.limit, 12, 'with lower-band requests in flight, slow ones cut a fifth');
});

test('a slow first token alone is not queueing: it takes two in a row', () => {
  const l = new AdaptiveLimit();
  for (let i = 0; i < 12; i++) l.sample(20, i, i, 1_000, true, 1, 8);
  assert.is(l.limit, 16);
  l.sample(300, 50, 50, 1_000, true, 1, 8); // the host's moment
  l.sample(20, 51, 51, 1_000, true, 1, 8);
  l.sample(300, 52, 52, 1_000, true, 1, 8);
  assert.is(l.limit, 17, 'slow samples between fast ones cut nothing, and slow start goes on');
  l.sample(300, 53, 53, 1_000, true, 1, 8);
  assert.is(l.limit, 13, 'the second in a row cuts a fifth (13.6)');
});

test('a limit that holds nothing back does not grow: an interactive client alone leaves it where it was', () => {
  const l = new AdaptiveLimit();
  // Bursts of interactive requests keep half of it and more in use, but no lower-band
  // request waits: its growth would be untested by what it governs.
  for (let i = 0; i < 100; i++) l.sample(20, i, i, 9, false, 1, 1);
  assert.is(l.limit, 4, 'still where it started when a batch job arrives');
  for (let i = 0; i < 4; i++) l.sample(20, 200 + i, 200 + i, 9, true, 1, 1);
  assert.is(l.limit, 8, 'grows once lower bands wait on it');
  l.sample(300, 300, 300, 9, false, 1, 1);
  l.sample(300, 301, 301, 9, false, 1, 1);
  assert.is(l.limit, 6, 'slow samples shrink it, whatever waits');
});

test('a collected first token acknowledges in slow start, when fast: the limit grows by its replica share', () => {
  const l = new AdaptiveLimit();
  l.acked(20, 1_000, true, 1, false, 0);
  assert.is(l.limit, 4, 'no interactive baseline yet: nothing to judge it against');
  l.sample(20, 0, 0, 1_000, true, 1, 1);
  assert.is(l.limit, 5);
  for (let i = 0; i < 12; i++) l.acked(30, 1_000, true, 0.5, false, i);
  assert.is(l.limit, 8, 'twelve fast acknowledgements on two replicas: three more per replica, half a request each');
  l.acked(500, 1_000, true, 1, false, 20);
  assert.is(l.limit, 8, 'a slow one (a long batch prompt, or queueing) neither grows nor shrinks it');
  l.acked(20, 1_000, false, 1, false, 21);
  l.acked(20, 3, true, 1, false, 22);
  assert.is(l.limit, 8, 'nor does a fast one while the limit holds nothing back');
  l.sample(300, 10, 30, 1_000, true, 1, 1);
  l.sample(300, 11, 31, 1_000, true, 1, 1);
  assert.is(l.limit, 6, 'slow interactive first tokens end slow start (6.4)');
  for (let i = 0; i < 10; i++) l.acked(20, 1_000, true, 1, false, 100 + 40 * i);
  assert.is(l.limit, 6, 'past slow start, with first-band requests in flight, only their first tokens move it');
});

test('past slow start, with no first-band request in flight, fast acknowledgements grow the limit by one per round trip', () => {
  const l = new AdaptiveLimit();
  for (let i = 0; i < 80; i++) l.sample(20, i, i, 1_000, true, 1, 80);
  l.sample(300, 100, 100, 1_000, true, 1, 80);
  l.sample(300, 101, 101, 1_000, true, 1, 80);
  assert.is(l.limit, 67, 'slow start ended at a fifth off 84 (67.2)');
  // The interactive client has left; the batch job's answers are all that is seen.
  for (let i = 1; i <= 100; i++) l.acked(25, 1_000, true, 1, true, 101 + 21 * i);
  assert.is(l.limit, 167, 'a hundred fast acknowledgements a round trip apart: a hundred more');
  for (let i = 1; i <= 100; i++) l.acked(25, 1_000, true, 1, true, 2_201 + i);
  assert.is(l.limit, 172, 'a hundred 1 ms apart: five round trips, five more');
  l.acked(500, 1_000, true, 1, true, 3_000);
  l.acked(20, 1_000, false, 1, true, 3_100);
  l.acked(20, 50, true, 1, true, 3_200);
  assert.is(l.limit, 172, 'not on a slow one, nor while it holds nothing back or is far from used');
});

test('engaged before any sample, the limit starts at what the lower bands already run', () => {
  const l = new AdaptiveLimit();
  l.engaged(120);
  assert.is(l.limit, 120, 'a batch job already running when the first band arrives is not cut to 4');
  l.engaged(2);
  assert.is(l.limit, 120, 'never lowered by it');
  l.sample(20, 0, 0, 120, true, 1, 1);
  l.sample(300, 1, 1, 120, true, 1, 1);
  l.sample(300, 2, 2, 120, true, 1, 1);
  assert.is(l.limit, 96, "the first band's samples judge it from there");
  l.engaged(500);
  assert.is(l.limit, 96, 'once sampled, what it learnt stands');
});

test.run();
