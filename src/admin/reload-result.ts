// What `POST /admin/v1/reload` answers, and `llmgw ctl reload` prints. The server role
// reads its config file again and either applies it or keeps the running one.
import type { ConfigProblem } from '../config/index.js';

/** `ok` is the discriminant. */
export type ReloadResult = ReloadApplied | ReloadRefused;

export interface ReloadApplied {
  readonly ok: true;
  /** The file read (as the server names it in config problems). */
  readonly source: string;
  /** Model names, as the control plane took the new catalog. */
  readonly models: { readonly added: readonly string[]; readonly removed: readonly string[]; readonly changed: readonly string[] };
  /** Keys that differ from the running server's but take effect only at a restart (ports, TLS, router timings). */
  readonly restart_needed: readonly string[];
}

/** The file could not be read or is invalid: nothing of it was applied. */
export interface ReloadRefused {
  readonly ok: false;
  readonly source: string;
  readonly problems: readonly ConfigProblem[];
}
