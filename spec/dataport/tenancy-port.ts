// A data port with tenancy on, built in the spec's process from a config text, in front
// of a real simulated engine on loopback: the directory is built from the snapshot the
// spec gives, the journal is a real folder, and every response's last byte is watched
// so that a spec can see what the journal held at that moment.

import { mkdtempSync, readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig, type Config } from '../../src/config/index.js';
import { createDataPort, type DataPort } from '../../src/dataport/data-port.js';
import type { BilledRecord, TenancySnapshot } from '../../src/messages/tenancy.js';
import { EndpointTable } from '../../src/router/endpoint-table.js';
import { startSimEngine, type RunningSim } from '../../src/sim/index.js';
import { Directory } from '../../src/tenancy/directory.js';
import { JournalAppender } from '../../src/tenancy/journal-appender.js';
import { journalDirOf, listSegments, segmentPath } from '../../src/tenancy/journal-segments.js';
import { HEALTH } from '../router/helpers.js';
import { dataPortOptions } from './in-process.js';

export interface TenancyPort {
  port: DataPort;
  url: string;
  config: Config;
  directory: Directory;
  journalDir: string;
  /** Every journal line so far, in order. */
  journal(): BilledRecord[];
  /** Request id → whether its journal line was there when its response's last byte was written. */
  journaledAtEnd: Map<string, boolean>;
  close(): Promise<void>;
}

/**
 * `yaml` lists the models and one endpoint per model, served by a simulated engine each
 * (their urls are replaced); its `tenancy.store` is put in a fresh temp folder.
 */
export async function startTenancyPort(yaml: string, snapshot: TenancySnapshot, simSpeed = 50): Promise<TenancyPort> {
  const dir = mkdtempSync(join(tmpdir(), 'llmgw-tenancy-'));
  const config = parseConfig(yaml, join(dir, 'llmgw.yaml'), {});
  const sims: RunningSim[] = [];
  const table = new EndpointTable({ connectTimeoutMs: 1_000, health: HEALTH });
  for (const e of config.endpoints) {
    const sim = await startSimEngine({ host: '127.0.0.1', port: 0, model: e.models[0]!, flavor: 'vllm', speed: simSpeed, seed: 1 });
    sims.push(sim);
    const state = table.add({ id: e.id, url: sim.url, models: e.models, weight: e.weight, priority: e.priority, pool: null, gpus: e.gpus });
    state.ready = true;
    state.reason = null;
  }
  const journalDir = journalDirOf(config.tenancy!.store);
  const journal = JournalAppender.open(journalDir);
  const directory = new Directory(snapshot, config.router.admission.bands.map((b) => b.name));
  const { options } = dataPortOptions(config, table, () => {});
  const port = createDataPort({ ...options, tenancy: { directory, journal, settings: config.tenancy!, units: new Map(config.models.map((m) => [m.name, m.units])) } });
  const read = (): BilledRecord[] =>
    listSegments(journalDir).flatMap((seq) =>
      readFileSync(segmentPath(journalDir, seq), 'utf8')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as BilledRecord),
    );
  const journaledAtEnd = new Map<string, boolean>();
  // Runs before the data port's own handler: wraps each response's writes to look at the
  // journal at the one that completes the client's answer — a stream's [DONE], the last
  // byte of a body of known length — or else at its end.
  port.server.prependListener('request', (req, res) => {
    const id = req.headers['x-request-id'];
    if (typeof id !== 'string') return;
    let bytes = 0;
    const look = (chunk: unknown): void => {
      if (journaledAtEnd.has(id)) return;
      const text = typeof chunk === 'string' ? chunk : Buffer.isBuffer(chunk) ? chunk.toString('utf8') : '';
      bytes += Buffer.byteLength(text);
      const length = Number(res.getHeader('content-length'));
      if (text.includes('data: [DONE]') || bytes >= length) journaledAtEnd.set(id, read().some((rec) => rec.id === id));
    };
    const write = res.write.bind(res) as (...args: unknown[]) => boolean;
    res.write = ((...args: unknown[]) => {
      look(args[0]);
      return write(...args);
    }) as typeof res.write;
    const end = res.end.bind(res) as (...args: unknown[]) => typeof res;
    res.end = ((...args: unknown[]) => {
      look(typeof args[0] === 'function' ? '' : args[0]);
      if (!journaledAtEnd.has(id)) journaledAtEnd.set(id, read().some((rec) => rec.id === id));
      return end(...args);
    }) as typeof res.end;
  });
  await new Promise<void>((resolve) => port.server.listen(0, '127.0.0.1', resolve));
  return {
    port,
    url: `http://127.0.0.1:${(port.server.address() as AddressInfo).port}`,
    config,
    directory,
    journalDir,
    journal: read,
    journaledAtEnd,
    async close() {
      port.server.closeAllConnections();
      await new Promise((resolve) => port.server.close(resolve));
      await Promise.all(sims.map((s) => s.close()));
      await table.close();
      journal.close();
    },
  };
}
