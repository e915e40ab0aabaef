// Pricing in a model's units: tokens, a price per million tokens of each kind, and
// GPU-seconds shared among the requests an endpoint served at once.
import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { estimateOf, priceOf } from '../../src/tenancy/units.js';

const used = { promptTokens: 1_000, completionTokens: 500, cachedTokens: 400 };

test('tokens: one unit per prompt or completion token, cached or not', () => {
  assert.is(priceOf('tokens', used, null), 1_500);
});

test('per million: uncached prompt, cached prompt and completion tokens each at their price', () => {
  const units = { per_million: { prompt: 2, completion: 8, cached: 0.5 } };
  assert.is(priceOf(units, used, null), (600 * 2 + 400 * 0.5 + 500 * 8) / 1e6);
  // An engine that reports more cached tokens than prompt tokens is not paid for the difference.
  assert.is(priceOf(units, { promptTokens: 10, completionTokens: 0, cachedTokens: 50 }, null), (10 * 0.5) / 1e6);
});

test("GPU-seconds: the endpoint's GPUs × the request's duration ÷ the requests it served at once", () => {
  assert.is(priceOf('gpu_seconds', used, { gpus: 8, durationMs: 1_500, concurrent: 4 }), 3);
  assert.is(priceOf('gpu_seconds', used, { gpus: 2, durationMs: 1_000, concurrent: 0 }), 2, 'never divided by less than the request itself');
  assert.is(priceOf('gpu_seconds', used, null), 0, 'no endpoint served it');
});

test('the estimate reserved before a request runs', () => {
  assert.is(estimateOf('tokens', 100, 256), 356);
  assert.is(estimateOf({ per_million: { prompt: 1, completion: 3, cached: 0 } }, 1_000_000, 1_000_000), 4);
  assert.is(estimateOf('gpu_seconds', 100, 256), 0, 'its duration is unknown beforehand');
});

test.run();
