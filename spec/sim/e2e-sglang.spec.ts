// `--flavor sglang`: the same engine behind SGLang's metric names and labels, so the
// router's SGLang scraping is exercised without a GPU.

import OpenAI from 'openai';
import { suite } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import type { SimProcess } from './helpers.js';
import { scrape, startSim, value, words } from './helpers.js';

const test = suite('sim e2e: --flavor sglang (CLI process)');
const MODEL = 'sim-sglang';
let sim: SimProcess;
let client: OpenAI;

test.before(async () => {
  sim = await startSim(MODEL, ['--flavor', 'sglang', '--speed', '50', '--num-gpu-blocks', '4096']);
  client = new OpenAI({ baseURL: `${sim.url}/v1`, apiKey: 'unused', maxRetries: 0 });
});
test.after(async () => {
  await sim?.stop();
});

test('/v1/models says owned_by sglang', async () => {
  const models = await client.models.list();
  assert.is((models.data[0] as unknown as { owned_by: string }).owned_by, 'sglang');
});

test('/metrics exposes SGLang names and labels, and no vllm: name', async () => {
  const prompt = words(300, 1);
  await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: prompt }], max_tokens: 10 });
  const again = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: prompt }], max_tokens: 10 });
  assert.ok(again.usage!.prompt_tokens_details!.cached_tokens! > 0);

  const { text, samples } = await scrape(sim.url);
  assert.not.match(text, /vllm:/);
  const labels = { engine_type: 'unified', model_name: MODEL, tp_rank: '0' };
  for (const name of [
    'sglang:num_running_reqs',
    'sglang:num_queue_reqs',
    'sglang:token_usage',
    'sglang:cache_hit_rate',
    'sglang:gen_throughput',
    'sglang:max_total_num_tokens',
    'sglang:prompt_tokens_total',
    'sglang:generation_tokens_total',
    'sglang:cached_tokens_total',
    'sglang:time_to_first_token_seconds_count',
    'sglang:inter_token_latency_seconds_count',
    'sglang:e2e_request_latency_seconds_count',
  ]) {
    assert.not.ok(Number.isNaN(value(samples, name, labels)), `${name} with engine_type/model_name/tp_rank labels`);
  }
  assert.is(value(samples, 'sglang:max_total_num_tokens', labels), 4096 * 16);
  assert.is(value(samples, 'sglang:generation_tokens_total', labels), 20);
  assert.is(value(samples, 'sglang:cached_tokens_total', labels), again.usage!.prompt_tokens_details!.cached_tokens);
  assert.ok(value(samples, 'sglang:cache_hit_rate', labels) > 0.4, 'about half the prompt tokens came from the cache');
  assert.ok(value(samples, 'sglang:gen_throughput', labels) > 0, 'tokens were generated within the last second');
  assert.is(value(samples, 'sglang:e2e_request_latency_seconds_count', labels), 2);
  assert.is(value(samples, 'sglang:token_usage', labels), 0);
});

test.run();
