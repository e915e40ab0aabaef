// Starting the real llmgw binary for benchmarks: simulated engines (`run --role=sim`) and
// the server (`run --role=server`) in front of them, each a child process spoken to over
// loopback sockets only — the same surfaces an operator and a client use.

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { launch, LLMGW_CLI, type Launched } from './processes.js';

export interface SimOptions {
  model: string;
  /** Time factor of the simulated GPU: 2 runs twice as fast as an H100 would. */
  speed: number;
  seed: number;
  /** KV cache size in blocks of 16 tokens. */
  numGpuBlocks?: number;
  maxNumSeqs?: number;
  flavor?: 'vllm' | 'sglang';
  /** Per-step token budget; 0 = none. */
  maxNumBatchedTokens?: number;
  gauges?: 'live' | 'step';
  gaugeLagMs?: number;
  /** vLLM's --scheduling-policy: priority orders the engine's queue by the request's priority field. */
  schedulingPolicy?: 'fcfs' | 'priority';
  /** false: an SGLang that publishes no /server_info, so llmgw learns its batch size. */
  serverInfo?: boolean;
  /** Step time in µs: per step, per prefill token, per decode token (`--step-us`). */
  stepUs?: readonly [number, number, number];
}

export interface RunningSim extends Launched {
  url: string;
}

export async function startSim(o: SimOptions): Promise<RunningSim> {
  const args = [LLMGW_CLI, 'run', '--role=sim', '--listen', '127.0.0.1:0', '--model', o.model, '--speed', String(o.speed), '--seed', String(o.seed)];
  if (o.numGpuBlocks !== undefined) args.push('--num-gpu-blocks', String(o.numGpuBlocks));
  if (o.maxNumSeqs !== undefined) args.push('--max-num-seqs', String(o.maxNumSeqs));
  if (o.flavor !== undefined) args.push('--flavor', o.flavor);
  if (o.maxNumBatchedTokens !== undefined) args.push('--max-num-batched-tokens', String(o.maxNumBatchedTokens));
  if (o.gauges !== undefined) args.push('--gauges', o.gauges);
  if (o.gaugeLagMs !== undefined) args.push('--gauge-lag-ms', String(o.gaugeLagMs));
  if (o.schedulingPolicy !== undefined) args.push('--scheduling-policy', o.schedulingPolicy);
  if (o.serverInfo === false) args.push('--no-server-info');
  if (o.stepUs !== undefined) args.push('--step-us', o.stepUs.join(','));
  const p = await launch({
    name: `sim ${o.model}`,
    command: process.execPath,
    args,
    waitFor: /^llmgw sim \S+ listening on (\S+)$/,
    env: { LLMGW_LOG_LEVEL: 'warn' },
  });
  return { ...p, url: p.match[1]! };
}

/** Config objects are plain JSON data: the YAML loader reads JSON text as it is. */
export type ConfigValue = string | number | boolean | null | ConfigValue[] | { [key: string]: ConfigValue };
export type ConfigObject = { [key: string]: ConfigValue };

export interface LlmgwConfigInput {
  model: string;
  /** `maxNumSeqs`: the engine's batch size, told to llmgw as `max_num_seqs`; unset, llmgw learns it. */
  endpoints: readonly { id: string; url: string; maxNumSeqs?: number }[];
  /**
   * Deep-merged over the generated config, layer after layer (undefined layers skipped):
   * objects key by key, arrays element by element. So `{ models: [{ routing_profile: 'chat' }] }`
   * sets the model's profile without restating the rest, and a suite's own settings
   * followed by `extraConfigFromEnv()` keeps both.
   */
  extra?: ConfigObject | readonly (ConfigObject | undefined)[] | undefined;
}

/** An llmgw.yaml for `endpoints` serving one model, loopback ports picked by the OS. */
export function llmgwConfig(input: LlmgwConfigInput): ConfigObject {
  const base: ConfigObject = {
    listen: '127.0.0.1:0',
    admin_listen: '127.0.0.1:0',
    // Per-request info logs would measure the logger, and a bench wants its stderr quiet.
    log_level: 'warn',
    models: [{ name: input.model }],
    endpoints: input.endpoints.map((e) => ({ id: e.id, url: e.url, models: [input.model], ...(e.maxNumSeqs === undefined ? {} : { max_num_seqs: e.maxNumSeqs }) })),
  };
  const layers = Array.isArray(input.extra) ? input.extra : [input.extra];
  return layers.reduce<ConfigObject>((config, layer) => (layer ? (deepMerge(config, layer) as ConfigObject) : config), base);
}

function deepMerge(base: ConfigValue, over: ConfigValue): ConfigValue {
  if (Array.isArray(base) && Array.isArray(over)) {
    const out = base.slice();
    over.forEach((v, i) => (out[i] = i < base.length ? deepMerge(base[i]!, v) : v));
    return out;
  }
  if (isObject(base) && isObject(over)) {
    const out: ConfigObject = { ...base };
    for (const [k, v] of Object.entries(over)) out[k] = k in base ? deepMerge(base[k]!, v) : v;
    return out;
  }
  return over;
}

function isObject(v: ConfigValue): v is ConfigObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Extra llmgw config from BENCH_LLMGW_CONFIG: inline JSON (`{"models":[{"routing_profile":"chat"}]}`)
 * or the path of a YAML/JSON file. It lets a router change be benchmarked under a given
 * profile without editing the suites. Not LLMGW_*: the server refuses unknown variables in
 * its own namespace, and it inherits this process's environment.
 */
export function extraConfigFromEnv(env: NodeJS.ProcessEnv = process.env): ConfigObject | undefined {
  const v = env.BENCH_LLMGW_CONFIG?.trim();
  if (!v) return undefined;
  const data: unknown = v.startsWith('{') ? JSON.parse(v) : parseYaml(readFileSync(v, 'utf8'));
  if (typeof data !== 'object' || data === null || Array.isArray(data)) throw new Error('BENCH_LLMGW_CONFIG must hold a mapping (a JSON or YAML object)');
  return data as ConfigObject;
}

export interface RunningLlmgw extends Launched {
  url: string;
  adminUrl: string;
}

/** Writes `config` to a temporary file and starts `llmgw run --role=server` on it. */
export async function startLlmgw(config: ConfigObject): Promise<RunningLlmgw> {
  const dir = await mkdtemp(join(tmpdir(), 'llmgw-bench-'));
  const path = join(dir, 'llmgw.yaml');
  await writeFile(path, JSON.stringify(config, null, 2) + '\n');
  let p: Launched;
  try {
    p = await launch({
      name: 'llmgw server',
      command: process.execPath,
      args: [LLMGW_CLI, 'run', '--role=server', '--config', path],
      waitFor: /^llmgw server listening on (\S+) \(admin (\S+)\)$/,
    });
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    ...p,
    url: p.match[1]!,
    adminUrl: p.match[2]!,
    stop: async () => {
      await p.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
