// A data port built in the spec's own process from a config text, in front of engines
// the spec runs: the stages, timers and bookkeeping are the real ones, and the spec can
// read the data port's state directly.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseConfig, type Config } from '../../src/config/index.js';
import { createDataPort, type DataPort, type DataPortOptions } from '../../src/dataport/data-port.js';
import type { UsageRecord } from '../../src/messages/accounting.js';
import { Admission } from '../../src/router/admission/admission.js';
import { Catalog } from '../../src/router/catalog.js';
import { EndpointTable, type EndpointState } from '../../src/router/endpoint-table.js';
import { PrefixIndex } from '../../src/router/scheduler/prefix-index.js';
import type { CpuRunner } from '../../src/runtime/index.js';
import { buildProfiles } from '../../src/router/scheduler/profiles.js';
import { Scheduler } from '../../src/router/scheduler/scheduler.js';
import { createScorers } from '../../src/router/scheduler/scorers.js';
import { hashPrefix } from '../../src/tasks/prefix-hash.js';
import { HEALTH } from '../router/helpers.js';

/** An engine the spec answers for: the handler gets the request and its whole body. */
export type EngineHandler = (req: IncomingMessage, res: ServerResponse, body: Buffer) => void;

export interface InProcessPort {
  port: DataPort;
  url: string;
  config: Config;
  table: EndpointTable;
  /** Every usage record, in the order requests ended. */
  records: UsageRecord[];
  /** Admission by model; null when it is off. */
  admissions: ReadonlyMap<string, Admission> | null;
  close(): Promise<void>;
}

/**
 * Starts one engine per endpoint of `yaml` (its `url` is replaced by the engine's), marks
 * them ready, and serves the data port on a loopback port. `engines` maps endpoint ids
 * to handlers; an endpoint without one keeps its URL and gets no engine. `cpu`: what
 * hashes long prompts, in place of hashing at once.
 */
/**
 * What the server passes `createDataPort` for `config`, with hashing in-process and
 * `usage` as the record sink; the admissions are returned for specs to inspect.
 */
export function dataPortOptions(config: Config, table: EndpointTable, usage: (record: UsageRecord) => void): { options: DataPortOptions; admissions: Map<string, Admission> | null } {
  const prefixIndex = new PrefixIndex(100);
  const r = config.router;
  const admissions = r.admission.enabled ? new Map(config.models.map((m) => [m.name, new Admission(m.name, table, r.admission, r.stale_after_ms)])) : null;
  const options: DataPortOptions = {
    catalog: new Catalog(config.models),
    table,
    scheduler: new Scheduler(),
    profiles: buildProfiles(r.profiles, createScorers({ staleAfterMs: r.stale_after_ms, kvCeiling: r.admission.kv_ceiling, prefixIndex })),
    modelProfiles: new Map(),
    prefixIndex,
    router: r,
    cpu: { run: <R>(_task: string, data: unknown) => Promise.resolve(hashPrefix(data as Parameters<typeof hashPrefix>[0]) as R) },
    usage,
    admissions,
  };
  return { options, admissions };
}

export async function startInProcess(yaml: string, engines: Record<string, EngineHandler>, cpu?: CpuRunner): Promise<InProcessPort> {
  const config = parseConfig(yaml, 'in-process.yaml', {});
  const servers: Server[] = [];
  const table = new EndpointTable({ connectTimeoutMs: 1_000, health: HEALTH });
  for (const e of config.endpoints) {
    const handler = engines[e.id];
    if (!handler) continue;
    const server = createServer((req, res) => {
      const parts: Buffer[] = [];
      req.on('data', (d: Buffer) => parts.push(d));
      req.on('end', () => handler(req, res, Buffer.concat(parts)));
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const state: EndpointState = table.add({
      id: e.id,
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      models: e.models,
      weight: e.weight,
      priority: e.priority,
      pool: null,
      batchSize: e.max_num_seqs ?? null,
      enginePriority: e.priority_scheduling ?? null,
    });
    state.ready = true;
    state.reason = null;
  }
  const records: UsageRecord[] = [];
  const { options, admissions } = dataPortOptions(config, table, (record) => records.push({ ...record }));
  const port = createDataPort(cpu ? { ...options, cpu } : options);
  await new Promise<void>((resolve) => port.server.listen(0, '127.0.0.1', resolve));
  return {
    port,
    url: `http://127.0.0.1:${(port.server.address() as AddressInfo).port}`,
    config,
    table,
    records,
    admissions,
    async close() {
      port.server.closeAllConnections();
      await new Promise((resolve) => port.server.close(resolve));
      for (const s of servers) s.closeAllConnections();
      await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
      await table.close();
    },
  };
}
