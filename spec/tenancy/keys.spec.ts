import * as assert from 'uvu/assert';
import { base62, generateKey, hashKey, KEY_PREFIX, looksLikeKey, newId } from '../../src/tenancy/keys.js';
import { suite } from '../support/uvu.js';

const test = suite('API keys are random base62 behind a fixed prefix, stored only as their sha256');

test('a generated key has the prefix, 32 random bytes in base62, its sha256 and a six-character display prefix', () => {
  const seen = new Set<string>();
  for (let i = 0; i < 200; i++) {
    const g = generateKey();
    assert.ok(g.key.startsWith(KEY_PREFIX));
    assert.ok(looksLikeKey(g.key), g.key);
    assert.is(g.hash, hashKey(g.key));
    assert.match(g.hash, /^[0-9a-f]{64}$/);
    assert.is(g.prefix, g.key.slice(0, KEY_PREFIX.length + 6));
    seen.add(g.key);
  }
  assert.is(seen.size, 200);
});

test('base62 is the number the bytes spell', () => {
  assert.is(base62(Uint8Array.of(0)), '0');
  assert.is(base62(Uint8Array.of(61)), 'z');
  assert.is(base62(Uint8Array.of(62)), '10');
  assert.is(base62(Uint8Array.of(1, 0)), '48'); // 256 = 4·62 + 8
  assert.is(base62(new Uint8Array(32).fill(255)).length, 43);
});

test('hashKey is sha256 in lowercase hex', () => {
  assert.is(hashKey('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
});

test('looksLikeKey refuses what no key can be, before any hashing', () => {
  const { key } = generateKey();
  for (const bad of ['', 'sk-llmgw-', 'sk-other-' + key.slice(9), key.slice(0, 30), key + 'xyzxyz', key.slice(0, -1) + '-', `Bearer ${key}`]) {
    assert.not.ok(looksLikeKey(bad), bad);
  }
});

test('ids carry their kind and 16 base62 characters', () => {
  assert.match(newId('org'), /^org_[0-9A-Za-z]{16}$/);
  assert.match(newId('team'), /^team_[0-9A-Za-z]{16}$/);
  assert.match(newId('project'), /^proj_[0-9A-Za-z]{16}$/);
  assert.match(newId('key'), /^key_[0-9A-Za-z]{16}$/);
  assert.is.not(newId('key'), newId('key'));
});

test.run();
