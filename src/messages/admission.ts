import { address, type Ask } from '../runtime/protocol.js';

/** What the admission actor reports per band (queue depth and lifetime counts). */
export interface BandStats {
  band: string;
  queued: number;
  admitted: number;
  shed: number;
  timedOut: number;
  cancelled: number;
  /** Admitted, then taken back from an engine before any of their answer reached the client, to make way for the first band, and queued again. */
  recalled: number;
}

export interface BandView extends BandStats {
  /** How long the oldest request of the band has waited, ms; null when none waits. */
  oldestWaitMs: number | null;
  /** Why a request of this band arriving now would queue, or null when it would go at once. */
  held: string | null;
}

export interface ModelAdmissionStats {
  model: string;
  /** Why the model's engines count as saturated now for the first band, or null. */
  saturated: string | null;
  /** Requests per replica the lower bands may keep in flight to an engine of unknown batch size while the first band is active. */
  adaptiveLimit: number;
  bands: BandView[];
}

/** Protocol of the admission actor (main thread, beside the data port). */
export type AdmissionMsg = { type: 'tick' } | ({ type: 'stats' } & Ask<ModelAdmissionStats[]>);

export const ADMISSION = address<AdmissionMsg>('admission');
