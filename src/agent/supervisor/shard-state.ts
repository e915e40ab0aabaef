// The shard state machine's legal moves. Kept as a table so that a transition the
// supervisor was never meant to make (ready → starting, failed → ready) is a loud bug
// instead of a status the control plane believes.
import type { ShardState } from '../../messages/agent.js';

const NEXT: Readonly<Record<ShardState, readonly ShardState[]>> = {
  // `loading` straight from `pending`: an adopted shard's processes already run.
  pending: ['starting', 'loading', 'draining', 'failed'],
  starting: ['loading', 'draining', 'failed'],
  loading: ['ready', 'draining', 'failed'],
  ready: ['draining', 'failed'],
  draining: ['stopped', 'failed'],
  stopped: [],
  failed: [],
};

export function canTransition(from: ShardState, to: ShardState): boolean {
  return NEXT[from].includes(to);
}

export function isTerminal(state: ShardState): boolean {
  return NEXT[state].length === 0;
}
