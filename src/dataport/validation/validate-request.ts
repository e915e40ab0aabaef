import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { formatPath, pointerToSegments, show } from '../../config/problems.js';
import type { RequestFault } from './fault.js';
import { checkShape } from './request-shape.js';
import { chatCompletionSchema, completionSchema, embeddingSchema } from './request-schema.js';

// Compiled once, at import. The body is never changed: no coercion, no defaults. Not
// `verbose`: it builds an error object for every key that passes `propertyNames` (a
// 2 KB chat body then costs 7-9 µs instead of 1); the failing value and subschema are
// looked up from the error's paths instead, on the failure path only.
const ajv = new Ajv({ allErrors: false, coerceTypes: false, useDefaults: false, discriminator: true, allowUnionTypes: true });
ajv.addVocabulary(['expected']);

interface Compiled {
  schema: Record<string, unknown>;
  validate: ValidateFunction;
}
const compile = (schema: Record<string, unknown>): Compiled => ({ schema, validate: ajv.compile(schema) });
const VALIDATORS: Record<string, Compiled> = {
  '/v1/chat/completions': compile(chatCompletionSchema),
  '/v1/completions': compile(completionSchema),
  '/v1/embeddings': compile(embeddingSchema),
};

/**
 * Null when `body` is a well-formed request for `path`, else the first fault: the
 * OpenAI `param` naming the field and a message a client author can act on. Only the
 * standard fields are typed; any other key passes as it is.
 */
export function validateRequest(path: string, body: Record<string, unknown>): RequestFault | null {
  const compiled = VALIDATORS[path];
  if (!compiled) return { param: null, message: `${path} takes no request body llmgw knows` };
  const shape = checkShape(body);
  if (shape) return shape;
  if (!compiled.validate(body)) return describe(compiled.validate.errors ?? [], { body, schema: compiled.schema });
  // Engines refuse it (vLLM: "Stream options can only be defined when `stream=True`").
  if (body.stream_options !== undefined && body.stream_options !== null && body.stream !== true) {
    return { param: 'stream_options', message: 'stream_options is only allowed when stream is true' };
  }
  return null;
}

/** The error ajv stopped at (the last one: branches of an anyOf come before it), in words. */
function describe(errors: readonly ErrorObject[], ctx: Context): RequestFault {
  return faultOf(errors[errors.length - 1]!, errors.slice(0, -1), ctx);
}

interface Context {
  body: unknown;
  schema: unknown;
}

function faultOf(e: ErrorObject, before: readonly ErrorObject[], ctx: Context): RequestFault {
  // A failed `then` reports itself after the error that made it fail: that one says what.
  if (e.keyword === 'if' && before.length > 0) return faultOf(before[before.length - 1]!, before.slice(0, -1), ctx);
  if (e.keyword === 'anyOf' || e.keyword === 'oneOf') {
    // When one branch got past the value's own type and failed further in, that
    // failure is the useful one (`stop[1] must be a string`, not "stop must be …").
    const prefix = `${e.schemaPath}/`;
    const deeper = before.filter((b) => b.schemaPath.startsWith(prefix) && b.instancePath.length > e.instancePath.length);
    const branches = new Set(deeper.map((b) => b.schemaPath.slice(prefix.length).split('/', 1)[0]));
    if (branches.size === 1) {
      const branch = `${prefix}${[...branches][0]!}/`;
      const own = before.filter((b) => b.schemaPath.startsWith(branch));
      return faultOf(own[own.length - 1]!, own.slice(0, -1), ctx);
    }
  }
  const segments = pointerToSegments(e.instancePath);
  const extra = extraSegment(e);
  if (extra !== null) segments.push(extra);
  const path = formatPath(segments);
  const name = path === '' ? 'the request body' : path;
  const data = at(ctx.body, e.instancePath.split('/').slice(1));
  // The keyword's own schema is the last step of its schemaPath ('#/properties/n/minimum').
  const parent = at(ctx.schema, e.schemaPath.split('/').slice(1, -1)) as { expected?: unknown } | undefined;
  return { param: path === '' ? null : path, message: `${name} ${reason(e, data, parent?.expected)}` };
}

/** Errors about a key rather than a value name the key. */
function extraSegment(e: ErrorObject): string | null {
  const p = e.params as Record<string, unknown>;
  if (e.keyword === 'required') return String(p['missingProperty']);
  if (e.keyword === 'propertyNames') return String(p['propertyName']);
  if (e.keyword === 'discriminator') return String(p['tag']);
  return null;
}

/** The value at a JSON pointer's (unescaped) steps. */
function at(root: unknown, steps: readonly string[]): unknown {
  let v = root;
  for (const raw of steps) {
    if (typeof v !== 'object' || v === null) return undefined;
    const step = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    v = Object.hasOwn(v, step) ? (v as Record<string, unknown>)[step] : undefined;
  }
  return v;
}

function reason(e: ErrorObject, data: unknown, expected: unknown): string {
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'required':
      return 'is required';
    case 'propertyNames':
      return PROTOTYPE_KEY.test(String(p['propertyName'])) ? 'is not allowed as a key: it has no meaning here and is refused as a prototype-pollution vector' : `is not a valid key (${typeof expected === 'string' ? expected : 'see the API reference'})`;
    case 'discriminator':
      return `must be one of system, developer, user, assistant, tool, function; got ${show((data as Record<string, unknown>)[String(p['tag'])])}`;
    case 'const':
      return `must be ${show(p['allowedValue'])}; got ${show(data)}`;
    case 'enum':
      return `must be one of ${(p['allowedValues'] as unknown[]).filter((v) => v !== null).map((v) => show(v)).join(', ')}; got ${show(data)}`;
    default:
      return `must be ${typeof expected === 'string' ? expected : ajvWords(e)}; got ${show(data)}`;
  }
}

const TYPE_WORDS: Record<string, string> = { string: 'a string', integer: 'an integer', number: 'a number', boolean: 'true or false', array: 'an array', object: 'an object', null: 'null' };
const PROTOTYPE_KEY = /^(__proto__|constructor|prototype)$/;

function ajvWords(e: ErrorObject): string {
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'minItems':
      return `an array of at least ${String(p['limit'])} items`;
    case 'maxItems':
      return `an array of at most ${String(p['limit'])} items`;
    case 'minLength':
      return 'a non-empty string';
    case 'type':
      return String(p['type']).split(',').map((t) => TYPE_WORDS[t] ?? t).join(' or ');
    default:
      return `valid (${e.message ?? e.keyword})`;
  }
}
