// Which ports a shard opens on its node, by engine, launch mode and rank. Placement
// hands them out of the configured range so two replicas on one node never collide.
// Ports an engine picks for itself at random (vLLM's internal ZMQ sockets, NCCL's) are
// not listed: the kernel gives those out free.
import type { EngineKind, VllmLaunchMode } from '../messages/shard-spec.js';

export interface PortNeeds {
  /** An OpenAI HTTP server (or, on an SGLang worker rank, the stub `/health` that binds `--port`). */
  readonly http: boolean;
  /**
   * Contiguous ports from the range starting at the rendezvous port every rank dials
   * (0: none). Only rank 0 hosts it.
   */
  readonly rendezvousBlock: number;
  /** Ports the engine opens at fixed numbers: a second such shard on the node cannot start. */
  readonly fixed: readonly number[];
}

/** Ray head's dashboard and Ray Client server: `ray start --head` opens both at these numbers. */
export const RAY_HEAD_FIXED_PORTS = [8265, 10001] as const;

/**
 * SGLang derives further sockets from offsets above its `--dist-init-addr` port, so the
 * dist-init port and this many above it are kept for it.
 */
export const SGLANG_PORTS_ABOVE_DIST_INIT = 8;

const HTTP_ONLY: PortNeeds = { http: true, rendezvousBlock: 0, fixed: [] };
const NOTHING: PortNeeds = { http: false, rendezvousBlock: 0, fixed: [] };

/**
 * - one node, any engine: the HTTP port.
 * - vLLM under Ray: rank 0 the HTTP port, the head's GCS port (the rendezvous) and
 *   Ray's fixed 8265 and 10001; workers only join the head, opening nothing of ours.
 * - vLLM `mp`: rank 0 the HTTP port and the master port; workers are `--headless`.
 * - SGLang: rank 0 the HTTP port and the dist-init block; every other rank binds
 *   `--port` too (recent versions serve a stub `/health` there).
 */
export function portNeeds(engine: EngineKind, launchMode: VllmLaunchMode | undefined, ranks: number, rank: number): PortNeeds {
  if (ranks === 1) return HTTP_ONLY;
  if (engine === 'sglang') return rank === 0 ? { http: true, rendezvousBlock: 1 + SGLANG_PORTS_ABOVE_DIST_INIT, fixed: [] } : HTTP_ONLY;
  if (rank !== 0) return NOTHING;
  return launchMode === 'ray' ? { http: true, rendezvousBlock: 1, fixed: RAY_HEAD_FIXED_PORTS } : { http: true, rendezvousBlock: 1, fixed: [] };
}
