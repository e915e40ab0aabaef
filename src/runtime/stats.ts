import type { OverflowPolicy } from './mailbox.js';
import type { CellStatus } from './actor-cell.js';

/** One actor as `llmgw ctl actors` and the admin API show it. */
export interface ActorStats {
  name: string;
  kind: string;
  thread: string;
  parent: string | null;
  status: CellStatus;
  /** Messages waiting now. */
  mailbox: number;
  capacity: number;
  highWater: number;
  overflow: OverflowPolicy;
  processed: number;
  failures: number;
  restarts: number;
  /** Messages a drop-oldest mailbox discarded to make room. */
  dropped: number;
  /** Messages refused at the door (full reject mailbox, stopping, a type it does not accept): dead letters. */
  rejected: number;
  /** Handling time quantiles, as the upper bound of their histogram bucket. */
  handlingP50Ms: number | undefined;
  handlingP99Ms: number | undefined;
  /** The actor's own one-line summary (its `describe` hook), when it has one. */
  details?: string;
}
