import { address, type Address, type Ask } from '../runtime/protocol.js';

/** Protocol of an in-process simulated engine (the embedded default's engines). */
export type SimEngineMsg = { type: 'address' } & Ask<string>;

/** The `replica`th simulated engine of `model`. */
export const simEngineAddress = (model: string, replica: number): Address<SimEngineMsg> => address(`sim:${model}:${replica}`);
