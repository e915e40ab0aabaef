import { isUtf8 } from 'node:buffer';
import type { RequestFault } from './fault.js';

/**
 * The body as a JSON object, or why it is not one. The Content-Type is not required to
 * say JSON: curl sends `application/x-www-form-urlencoded` unless told otherwise and
 * clients rely on a JSON body being read as JSON; it only sharpens the message when the
 * body is not JSON. Bytes that are not UTF-8 are refused rather than replaced, since the
 * body usually travels to the engine as received.
 */
export function parseRequestBody(raw: Buffer, contentType: string | undefined): { body: Record<string, unknown> } | RequestFault {
  if (raw.length === 0) return fault('the request body is empty; send a JSON object');
  if (!isUtf8(raw)) return fault('the request body is not valid UTF-8; send JSON text encoded as UTF-8');
  let parsed: unknown;
  try {
    // V8 parses iteratively: nesting cannot overflow the stack here (checkShape bounds it after).
    parsed = JSON.parse(raw.toString('utf8'));
  } catch (err) {
    const hint = contentType === undefined || /json/i.test(contentType) ? '' : ` (it was sent as ${contentType.split(';', 1)[0]}; send Content-Type: application/json)`;
    return fault(`the request body is not valid JSON: ${(err as Error).message}${hint}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    return fault(`the request body must be a JSON object, not ${parsed === null ? 'null' : Array.isArray(parsed) ? 'an array' : `a ${typeof parsed}`}`);
  }
  return { body: parsed as Record<string, unknown> };
}

function fault(message: string): RequestFault {
  return { param: null, message };
}
