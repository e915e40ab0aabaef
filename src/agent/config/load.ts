// Loading agent.yaml: YAML → ajv (which fills the defaults) → the checks a schema cannot
// express → one frozen AgentConfig, or LLMGW_CONFIG_INVALID listing every problem in the
// server config's format (`agent.yaml: listen: …`).
import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import { parse as parseYaml } from 'yaml';
import { LlmgwError } from '../../errors.js';
import { readConfigFile } from '../../config/load.js';
import { formatPath, formatProblem, fromAjvError } from '../../config/problems.js';
import type { ConfigProblem } from '../../config/types.js';
import { parseHostPort } from '../../net/host-port.js';
import { resolveFabrics } from '../discovery/index.js';
import { agentConfigSchema, type AgentConfig } from './schema.js';

export interface AgentConfigOverrides {
  listen?: string | undefined;
}

let validator: ValidateFunction | undefined;

/** Reads and validates the agent config; no path means every default. `state_dir` comes back absolute. */
export function loadAgentConfig(path: string | undefined, overrides: AgentConfigOverrides = {}): AgentConfig {
  const source = path ?? '(defaults)';
  let data: unknown = {};
  if (path !== undefined) {
    try {
      data = parseYaml(readConfigFile(path)) ?? {};
    } catch (err) {
      if (err instanceof LlmgwError) throw err;
      throw new LlmgwError('LLMGW_CONFIG_INVALID', `${path}: ${(err as Error).message.split('\n')[0]}`);
    }
  }
  if (overrides.listen !== undefined && typeof data === 'object' && data !== null) (data as Record<string, unknown>).listen = overrides.listen;

  validator ??= new Ajv({ allErrors: true, useDefaults: true, verbose: true, strict: true }).compile(agentConfigSchema);
  const problems: ConfigProblem[] = validator(data)
    ? crossCheck(data as AgentConfig).map((p) => ({ source, ...p }))
    : (validator.errors ?? []).map(fromAjvError).map((p) => ({ source, path: formatPath(p.segments), message: p.message }));
  if (problems.length > 0) throw new LlmgwError('LLMGW_CONFIG_INVALID', problems.map(formatProblem).join('\n'), { problems });
  const config = data as AgentConfig;
  return deepFreeze({ ...config, state_dir: resolve(config.state_dir) });
}

/** What the schema cannot say. */
function crossCheck(c: AgentConfig): { path: string; message: string }[] {
  const out: { path: string; message: string }[] = [];
  const { host } = parseHostPort(c.listen, 'listen');
  if (!isLoopback(host)) {
    out.push({ path: 'listen', message: `must be a loopback address (127.0.0.1, ::1, localhost), not ${host}: the control interface has no authentication and starts processes` });
  }
  const fabrics = resolveFabrics(c.fabrics, []);
  if (!fabrics.ok) for (const p of fabrics.problems) out.push({ path: 'fabrics', message: p.message });
  return out;
}

function isLoopback(host: string): boolean {
  if (host === 'localhost' || host === '::1') return true;
  return isIP(host) === 4 && host.startsWith('127.');
}

function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null) {
    for (const k of Object.keys(v)) deepFreeze((v as Record<string, unknown>)[k]);
    Object.freeze(v);
  }
  return v;
}
