import type { Ask } from '../runtime/protocol.js';

/** Protocol of an in-process simulated engine (the embedded default's engines). */
export type SimEngineMsg = { type: 'address' } & Ask<string>;
