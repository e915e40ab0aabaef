import { suite } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { BLOCK_SIZE, extendBlockHashes } from '../../src/sim/kv-cache.js';
import { applyChatTemplate, pieceId, pieces, tokenize } from '../../src/sim/tokenizer.js';

const test = suite('sim tokenizer');

const PROSE =
  'The quick brown fox jumps over the lazy dog. Routers that know which engine holds a prefix can send a request ' +
  'where its system prompt is already cached, and the time to first token falls accordingly; without that knowledge ' +
  'every replica recomputes the same blocks again and again, which wastes most of the budget.';

test('about one token per word, the same ids every time', () => {
  const ids = tokenize(PROSE);
  const wordCount = PROSE.split(/\s+/).length;
  assert.ok(ids.length >= wordCount && ids.length <= wordCount * 1.3, `${ids.length} tokens for ${wordCount} words`);
  assert.equal(tokenize(PROSE), ids);
  assert.ok(ids.every((id) => Number.isInteger(id) && id >= 0 && id < 128000));
});

test('pieces join back to the exact text, whatever it contains', () => {
  for (const text of [PROSE, 'a <| b |> c', '  leading and trailing  ', 'tabs\tand\nnewlines\n\n', 'ünïcödé 漢字 ✓ 12345', '<|eot_id|>x<|nope']) {
    assert.is(pieces(text).join(''), text);
  }
});

test('special tokens are single ids and survive punctuation before them', () => {
  assert.equal(tokenize('<|eot_id|>'), [128009]);
  assert.equal(tokenize('done.<|eot_id|>').slice(-1), [128009]);
  assert.is(pieceId('<|begin_of_text|>'), 128000);
});

test('long runs of letters are split, as BPE would', () => {
  assert.ok(tokenize('a'.repeat(100)).length >= 10);
});

test('the chat template renders Llama-3 headers and an open assistant turn', () => {
  const text = applyChatTemplate([
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: [{ type: 'text', text: 'Hi' }, { type: 'text', text: ' there' }] },
  ]);
  assert.is(
    text,
    '<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>' +
      '<|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>' +
      '<|start_header_id|>assistant<|end_header_id|>\n\n',
  );
  assert.not.match(applyChatTemplate([{ role: 'user', content: 'x' }], { addGenerationPrompt: false }), /assistant/);
});

test('two conversations with the same system prompt share their leading KV blocks', () => {
  const system = { role: 'system', content: PROSE + ' ' + PROSE };
  const a = tokenize(applyChatTemplate([system, { role: 'user', content: 'What is a fox?' }]));
  const b = tokenize(applyChatTemplate([system, { role: 'user', content: 'Tell me about routers, please.' }]));
  const ha: number[] = [];
  const hb: number[] = [];
  extendBlockHashes(ha, a);
  extendBlockHashes(hb, b);
  let shared = 0;
  while (shared < Math.min(ha.length, hb.length) && ha[shared] === hb[shared]) shared++;
  let common = 0;
  while (a[common] === b[common]) common++;
  const systemTokens = tokenize(applyChatTemplate([system], { addGenerationPrompt: false })).length;
  assert.ok(common >= systemTokens, 'the whole system turn is a common token prefix');
  assert.is(shared, Math.floor(common / BLOCK_SIZE), 'every full block of the common prefix is shared, none after it');
  assert.ok(shared >= 6);
});

test.run();
