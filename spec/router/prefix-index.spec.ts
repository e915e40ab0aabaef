import { test } from '../support/uvu.js';
import * as assert from 'uvu/assert';
import { PrefixIndex } from '../../src/router/scheduler/prefix-index.js';

const chain = (...hs: number[]): Float64Array => Float64Array.from(hs);

test('the blocks matched are the longest served prefix, stopping at the first block nobody served', () => {
  const index = new PrefixIndex(1_000);
  index.record(chain(1, 2, 3, 4), 'a');
  index.record(chain(1, 2, 9), 'b');
  const out = new Float64Array(3);
  index.match(chain(1, 2, 3, 4, 5, 6, 7, 8), ['a', 'b', 'c'], out);
  assert.equal([...out], [4, 2, 0]);
  index.match(chain(7, 2, 3), ['a', 'b', 'c'], out);
  assert.equal([...out], [0, 0, 0], 'a chain that differs in its first block matches nothing');
});

test('served depth: the most leading blocks one of the given endpoints served, for what its cache is expected to hold', () => {
  const index = new PrefixIndex(1_000);
  index.record(chain(1, 2, 3, 4), 'a');
  index.record(chain(1, 2, 9), 'b');
  const ids = (...xs: string[]) => xs.map((id) => ({ id }));
  assert.is(index.servedDepth(chain(1, 2, 3, 4, 5), ids('a', 'b')), 4);
  assert.is(index.servedDepth(chain(1, 2, 3, 4, 5), ids('b')), 2, 'only the endpoints given count');
  assert.is(index.servedDepth(chain(1, 2, 3), ids('c')), 0, 'none of them served it');
  assert.is(index.servedDepth(chain(8, 2, 3), ids('a', 'b')), 0, 'a chain that differs in its first block holds nothing');
});

test('a block remembers its most recent servers, a bounded number of them', () => {
  const index = new PrefixIndex(1_000, 2);
  for (const id of ['a', 'b', 'c']) index.record(chain(1), id);
  const out = new Float64Array(3);
  index.match(chain(1), ['a', 'b', 'c'], out);
  assert.equal([...out], [0, 1, 1]);
  index.record(chain(1), 'b'); // b again: moves to the front, nothing dropped
  index.match(chain(1), ['a', 'b', 'c'], out);
  assert.equal([...out], [0, 1, 1]);
});

test('bounded: recently used chains survive, old ones are forgotten', () => {
  const index = new PrefixIndex(100);
  index.record(chain(-1), 'kept');
  for (let i = 0; i < 1_000; i++) {
    index.record(chain(i), 'x');
    if (i % 20 === 0) index.match(chain(-1), ['kept'], new Float64Array(1)); // touched now and then
  }
  assert.ok(index.size <= 100, `size ${index.size}`);
  const out = new Float64Array(1);
  index.match(chain(-1), ['kept'], out);
  assert.is(out[0], 1, 'the touched entry is still there');
  index.match(chain(3), ['x'], out);
  assert.is(out[0], 0, 'an early, untouched entry is gone');
});

test.run();
