import type { BandStats } from '../router/admission/admission-queue.js';
import type { Ask } from '../runtime/protocol.js';

export interface ModelAdmissionStats {
  model: string;
  /** Why the model's engines count as saturated now, or null. */
  saturated: string | null;
  bands: BandStats[];
}

/** Protocol of the admission actor (main thread, beside the data port). */
export type AdmissionMsg = { type: 'tick' } | ({ type: 'stats' } & Ask<ModelAdmissionStats[]>);
