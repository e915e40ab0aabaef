// Request validation on the data port: pure functions over a parsed body, no HTTP.
export type { RequestFault } from './fault.js';
export { maxTokensFault } from './max-tokens.js';
export { parseRequestBody } from './parse-body.js';
export { validateRequest } from './validate-request.js';
