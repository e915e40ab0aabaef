// The agent's local control interface, on loopback: what the control-plane stream will
// call, and what an operator can curl meanwhile. It holds no state; the supervisor actor
// owns the shards and discovery reads the hardware fresh on every call.
import { createServer, type Server } from 'node:http';
import { LlmgwError } from '../errors.js';
import { readBody } from '../net/read-body.js';
import { sendError, sendJson } from '../net/respond.js';
import type { ShardSpec } from './engines/index.js';
import type { SupervisorMsg } from '../messages/agent.js';
import type { ActorRef } from '../runtime/index.js';
import type { AgentConfig } from './config/schema.js';
import { discoverInventory, type DiscoveryKnobs } from './discovery/index.js';
import { pidsInGroups } from './supervisor/index.js';

export interface ControlPortOptions {
  readonly supervisor: ActorRef<SupervisorMsg>;
  readonly config: AgentConfig;
  /** How this agent's config sets discovery's inputs, for its failures. */
  readonly knobs: DiscoveryKnobs;
}

const SHARD_PATH = /^\/agent\/v1\/shards\/([^/]+)$/;
/** A shard spec is a few hundred bytes; anything near this is not one. */
const MAX_SPEC_BYTES = 256 * 1024;

/**
 * - `GET /agent/v1/inventory`: the node's GPUs and adapters, the engines' own processes
 *   counted as ours (not as foreign processes that keep a card out of placement).
 * - `GET /agent/v1/shards`: every shard and its state.
 * - `PUT /agent/v1/shards/:id` (body: a ShardSpec): 201 started, 200 when the same spec
 *   already runs (a retried command), 409 for another spec under a live id, 400 invalid.
 * - `DELETE /agent/v1/shards/:id`: 202 draining (the stop goes on; GET shows it end),
 *   200 when the shard had already failed (it is forgotten), 404 unknown.
 */
export function createControlPort(opts: ControlPortOptions): Server {
  const { supervisor, config, knobs } = opts;
  return createServer((req, res) => {
    const path = (req.url ?? '/').split('?', 1)[0]!;
    const route = async (): Promise<void> => {
      if (path === '/agent/v1/inventory' && req.method === 'GET') {
        const groups = new Set((await supervisor.ask({ type: 'list' })).flatMap((s) => s.processes.map((p) => p.pgid)));
        const inventory = await discoverInventory({
          nvidiaSmi: config.nvidia_smi,
          ibRoot: config.ib_root,
          noGpu: config.no_gpu,
          fabrics: config.fabrics,
          ours: pidsInGroups(groups),
          knobs,
        }).catch((err: unknown) => {
          throw LlmgwError.from(err, 'LLMGW_DISCOVERY_FAILED');
        });
        return sendJson(res, 200, inventory);
      }
      if (path === '/agent/v1/shards' && req.method === 'GET') return sendJson(res, 200, await supervisor.ask({ type: 'list' }));
      const shard = SHARD_PATH.exec(path);
      if (shard !== null && req.method === 'PUT') {
        const spec = parseJson(await readBody(req, MAX_SPEC_BYTES)) as ShardSpec;
        const out = await supervisor.ask({ type: 'start', id: decodeURIComponent(shard[1]!), spec });
        if (!out.ok) return sendError(res, LlmgwError.deserialize(out.error));
        return sendJson(res, out.value.created ? 201 : 200, out.value.status);
      }
      if (shard !== null && req.method === 'DELETE') {
        const out = await supervisor.ask({ type: 'stop', id: decodeURIComponent(shard[1]!) });
        if (!out.ok) return sendError(res, LlmgwError.deserialize(out.error));
        return sendJson(res, out.value.state === 'draining' ? 202 : 200, out.value);
      }
      if (shard !== null || path === '/agent/v1/shards' || path === '/agent/v1/inventory') {
        return sendError(res, new LlmgwError('LLMGW_METHOD_NOT_ALLOWED', `${req.method} is not allowed on ${path}`));
      }
      return sendError(res, new LlmgwError('LLMGW_NOT_FOUND', `no route for ${req.method} ${path}`));
    };
    route().catch((err: unknown) => sendError(res, LlmgwError.from(err)));
  });
}

function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch (err) {
    throw new LlmgwError('LLMGW_INVALID_REQUEST', `the body is not JSON: ${(err as Error).message}`);
  }
}
