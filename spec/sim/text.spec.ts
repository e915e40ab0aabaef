import { suite } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { MAX_NATURAL_TOKENS, MIN_NATURAL_TOKENS, planOutput } from '../../src/sim/text.js';
import { tokenize } from '../../src/sim/tokenizer.js';

const test = suite('sim text');

const prompt = tokenize('Write a haiku about prefix caches.');
const base = { engineSeed: 7, promptTokenIds: prompt, index: 0, room: 1000 };

test('the same seed and request give the same text; any change gives another', () => {
  const a = planOutput({ ...base, maxTokens: 40 });
  assert.equal(planOutput({ ...base, maxTokens: 40 }), a);
  const text = (p: ReturnType<typeof planOutput>): string => p.pieces.join('');
  assert.is.not(text(planOutput({ ...base, engineSeed: 8, maxTokens: 40 })), text(a), 'engine seed');
  assert.is.not(text(planOutput({ ...base, requestSeed: 1, maxTokens: 40 })), text(a), 'request seed');
  assert.is.not(text(planOutput({ ...base, index: 1, maxTokens: 40 })), text(a), 'choice index');
  assert.is.not(text(planOutput({ ...base, promptTokenIds: tokenize('Something else.'), maxTokens: 40 })), text(a), 'prompt');
});

test('max_tokens gives exactly that many tokens and finish_reason length', () => {
  for (const n of [1, 2, 17, 300]) {
    const p = planOutput({ ...base, maxTokens: n });
    assert.is(p.tokenIds.length, n);
    assert.is(p.pieces.length, n);
    assert.is(p.finishReason, 'length');
  }
});

test('without max_tokens the length is seeded in 16..128 and the model "stops"', () => {
  const lengths = new Set<number>();
  for (let i = 0; i < 200; i++) {
    const p = planOutput({ ...base, promptTokenIds: tokenize(`prompt number ${i}`) });
    assert.ok(p.tokenIds.length >= MIN_NATURAL_TOKENS && p.tokenIds.length <= MAX_NATURAL_TOKENS, String(p.tokenIds.length));
    assert.is(p.finishReason, 'stop');
    lengths.add(p.tokenIds.length);
  }
  assert.ok(lengths.size > 40, 'lengths vary across prompts');
});

test('output is cut at the room left in the context, with length', () => {
  const p = planOutput({ ...base, room: 10 });
  assert.is(p.tokenIds.length, 10);
  assert.is(p.finishReason, 'length');
});

test('every piece is one token: re-tokenizing the text gives the same ids', () => {
  const p = planOutput({ ...base, maxTokens: 500 });
  assert.equal(tokenize(p.pieces.join('')), p.tokenIds);
});

test.run();
