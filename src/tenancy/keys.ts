import { createHash, randomBytes } from 'node:crypto';
import type { ScopeKind } from '../messages/tenancy.js';

// API keys and entity ids. A key is shown once and only its sha256 is stored, so the
// request path authenticates by hashing what it was sent and looking the hash up.

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
export const KEY_PREFIX = 'sk-llmgw-';
/** Characters of the base62 part kept for display. */
const DISPLAY_CHARS = 6;
const ID_CHARS = 16;
/** 32 bytes in base62 take 43 characters at most; fewer when the leading digits are zero. */
const KEY_BODY = /^[0-9A-Za-z]{40,43}$/;

const ID_PREFIX: Record<ScopeKind, string> = { org: 'org_', team: 'team_', project: 'proj_', key: 'key_' };

export interface GeneratedKey {
  /** The full key, `sk-llmgw-…`: the only copy there will be. */
  key: string;
  /** sha256 of `key`, lowercase hex. */
  hash: string;
  /** `sk-llmgw-` and the first characters of the random part. */
  prefix: string;
}

/** Base62 of a byte string, as one big number. */
export function base62(bytes: Uint8Array): string {
  let n = 0n;
  for (const b of bytes) n = (n << 8n) | BigInt(b);
  let out = '';
  while (n > 0n) {
    out = ALPHABET[Number(n % 62n)] + out;
    n /= 62n;
  }
  return out || '0';
}

export function generateKey(): GeneratedKey {
  const key = KEY_PREFIX + base62(randomBytes(32));
  return { key, hash: hashKey(key), prefix: key.slice(0, KEY_PREFIX.length + DISPLAY_CHARS) };
}

export function hashKey(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** A cheap shape check before hashing, so that garbage in an Authorization header costs no sha256. */
export function looksLikeKey(text: string): boolean {
  return text.startsWith(KEY_PREFIX) && KEY_BODY.test(text.slice(KEY_PREFIX.length));
}

/** A fresh id for an entity of `kind`: its prefix and 16 uniformly drawn base62 characters. */
export function newId(kind: ScopeKind): string {
  let id = ID_PREFIX[kind];
  while (id.length < ID_PREFIX[kind].length + ID_CHARS) {
    for (const b of randomBytes(ID_CHARS)) {
      // 248 = 4 × 62: rejecting the bytes above it keeps every character equally likely.
      if (b < 248 && id.length < ID_PREFIX[kind].length + ID_CHARS) id += ALPHABET[b % 62];
    }
  }
  return id;
}
