// Pricing in a model's units: tokens, a price per million tokens of each kind, and
// GPU-seconds shared among the requests an endpoint served at once.
import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { estimateOf, GpuSecondRates, priceOf } from '../../src/tenancy/units.js';

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
  assert.is(estimateOf('gpu_seconds', 100, 256), 0, 'its duration is unknown beforehand, and nothing was learnt');
  assert.is(estimateOf('gpu_seconds', 100, 300, 0.01), 4, "at the model's learnt GPU-seconds per token");
});

test('GPU-seconds per token are learnt per model from billed requests, the latest weighing most', () => {
  const rates = new GpuSecondRates();
  assert.is(rates.of('m'), 0);
  rates.observe('m', 2, 1_000);
  assert.is(rates.of('m'), 0.002, 'the first request sets it');
  for (let i = 0; i < 200; i++) rates.observe('m', 4, 1_000);
  assert.ok(Math.abs(rates.of('m') - 0.004) < 1e-6, 'it follows what requests cost now');
  rates.observe('m', 1, 0);
  assert.ok(Math.abs(rates.of('m') - 0.004) < 1e-6, 'a request without tokens teaches nothing');
  assert.is(rates.of('other'), 0, 'per model');
});

test.run();
