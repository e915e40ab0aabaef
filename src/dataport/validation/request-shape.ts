import { formatPath, type Segment } from '../../config/problems.js';
import type { RequestFault } from './fault.js';

/** Deepest nesting accepted anywhere in a body: far above any real tool schema, far below what overflows JSON.stringify (~5,000). */
export const MAX_DEPTH = 128;

/**
 * What no field of any request may hold, standard or not: nesting past MAX_DEPTH (the
 * body may be re-serialised on its way, and a recursive engine would overflow), a
 * `__proto__` key (JSON.parse makes it an own property, harmless until some merge
 * copies it with assignment and swaps a prototype), and strings with unpaired UTF-16
 * surrogates (`"\ud800"` is valid JSON but not encodable text; engines fail on it).
 * One walk over the parsed value; cost is linear in its nodes.
 */
export function checkShape(body: unknown): RequestFault | null {
  const found = walk(body, 0);
  if (found === null) return null;
  // A nesting fault is named by its top-level field: a path 128 levels long helps no one.
  const param = formatPath(found.deep ? found.path.slice(0, 1) : found.path);
  return { param: param === '' ? null : param, message: `${param === '' ? 'the body' : param} ${found.reason}` };
}

interface Found {
  path: Segment[];
  reason: string;
  deep?: true;
}

const UNPAIRED = 'contains an unpaired UTF-16 surrogate (an escape in \\ud800-\\udfff without its pair); send well-formed Unicode text';

function walk(v: unknown, depth: number): Found | null {
  if (typeof v === 'string') return v.isWellFormed() ? null : { path: [], reason: UNPAIRED };
  if (typeof v !== 'object' || v === null) return null;
  if (depth >= MAX_DEPTH) return { path: [], reason: `is nested more than ${MAX_DEPTH} levels deep`, deep: true };
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const item: unknown = v[i];
      if (typeof item !== 'object' && typeof item !== 'string') continue;
      const found = walk(item, depth + 1);
      if (found) {
        found.path.unshift(i);
        return found;
      }
    }
    return null;
  }
  const o = v as Record<string, unknown>;
  // for-in visits own keys of a parsed object (its prototype is the untouched Object.prototype) without allocating.
  for (const k in o) {
    if (k === '__proto__') return { path: [k], reason: "is not allowed: '__proto__' has no meaning in a request and is refused as a prototype-pollution vector" };
    if (!k.isWellFormed()) return { path: [], reason: `has a key that ${UNPAIRED}` };
    const found = walk(o[k], depth + 1);
    if (found) {
      found.path.unshift(k);
      return found;
    }
  }
  return null;
}
