// Reload without a restart (SIGHUP, `llmgw ctl reload`): the config file is read again
// and what can change in place does: the placed catalog (scaling, profiles, models
// added or removed: a model gone is drained, then stopped), the models clients may
// name with their aliases and fallbacks, and the static endpoint list. A bad file
// changes nothing. What only a restart applies (ports, TLS, router and control timings)
// is named in the answer, never silently ignored.
import { catalogLabels } from '../accounting/model-labels.js';
import type { ReloadResult } from '../admin/reload-result.js';
import { DEFAULT_CONFIG_SOURCE, loadConfig, type Config, type ConfigOverrides, type ConfigProblem } from '../config/index.js';
import type { UnitsConfig } from '../config/types.js';
import { placedModels } from '../control/catalog.js';
import type { DataPort } from '../dataport/data-port.js';
import { LlmgwError } from '../errors.js';
import { createLogger } from '../log.js';
import type { AccountingMsg } from '../messages/accounting.js';
import type { ControlMsg } from '../messages/control.js';
import type { EndpointRegistryMsg } from '../messages/endpoints.js';
import { Admission } from '../router/admission/admission.js';
import { Catalog } from '../router/catalog.js';
import type { EndpointTable } from '../router/endpoint-table.js';
import type { ActorRef } from '../runtime/index.js';

export interface Reloadable {
  readonly path: string | undefined;
  readonly overrides: ConfigOverrides;
  /** The config the server started with: what a restart-bound key is compared against. */
  readonly started: Config;
  readonly dataPort: DataPort;
  readonly table: EndpointTable;
  readonly registry: ActorRef<EndpointRegistryMsg>;
  readonly accounting: ActorRef<AccountingMsg>;
  /** Null when no control plane runs. */
  readonly control: ActorRef<ControlMsg> | null;
  /** Admission per model, shared with the data port; null when admission is off. */
  readonly admissions: Map<string, Admission> | null;
  /** How each model is priced, shared with the data port's tenancy; null when tenancy is off. */
  readonly units: Map<string, UnitsConfig> | null;
}

/** Keys whose change needs a restart: they are bound at start (ports, TLS, threads, timers). */
const AT_START: readonly (keyof Config)[] = ['listen', 'admin_listen', 'agent_listen', 'agent_tls', 'agent_insecure', 'admin_token', 'log_level', 'access_log', 'runtime', 'router', 'control', 'simulate', 'tenancy'];

const log = createLogger('server.reload');

export async function reload(r: Reloadable): Promise<ReloadResult> {
  const source = r.path ?? (process.env.LLMGW_CONFIG || DEFAULT_CONFIG_SOURCE);
  let next: Config;
  try {
    next = loadConfig({ path: r.path, overrides: r.overrides });
  } catch (err) {
    const e = LlmgwError.from(err);
    const problems = (e.details?.problems as ConfigProblem[] | undefined) ?? [{ source, path: '', message: e.message }];
    log.warn('reload refused: the running config stays', { source, problems: problems.length, first: e.message.split('\n')[0] });
    return { ok: false, source, problems };
  }
  const restartNeeded: string[] = AT_START.filter((k) => JSON.stringify(r.started[k]) !== JSON.stringify(next[k]));
  const placed = placedModels(next);
  let models: { added: string[]; removed: string[]; changed: string[] } = { added: [], removed: [], changed: [] };
  if (r.control) models = await r.control.ask({ type: 'catalog', models: placed }, { timeoutMs: 10_000 });
  else if (placed.length > 0) restartNeeded.push('models[].profiles (the control plane starts with the server when a model has profiles)');

  if (r.admissions) {
    for (const m of next.models) if (!r.admissions.has(m.name)) r.admissions.set(m.name, new Admission(m.name, r.table, next.router.admission, next.router.stale_after_ms));
  }
  r.accounting.tell({ type: 'catalog', models: catalogLabels(next.models) });
  if (r.units) {
    r.units.clear();
    for (const m of next.models) r.units.set(m.name, m.units);
  }
  r.dataPort.setCatalog(new Catalog(next.models), new Map(next.models.flatMap((m) => (m.routing_profile ? [[m.name, m.routing_profile] as const] : []))));
  await r.registry.ask(
    {
      type: 'configured',
      endpoints: next.endpoints.map((e) => ({
        id: e.id,
        url: e.url,
        models: [...e.models],
        weight: e.weight,
        priority: e.priority,
        pool: e.pool ?? null,
        batchSize: e.max_num_seqs ?? null,
        stepBudget: e.max_num_batched_tokens ?? null,
        enginePriority: e.priority_scheduling ?? null,
        gpus: e.gpus,
      })),
    },
    { timeoutMs: 30_000 },
  );
  log.info('config reloaded', { source, ...models, restartNeeded });
  return { ok: true, source, models, restart_needed: restartNeeded };
}
