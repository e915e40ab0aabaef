// vLLM: single node, or multi-node under Ray or under vLLM's own launcher (`mp`).
//
// Under both multi-node modes the rendezvous point is on rank 0 (the Ray head's GCS
// port, the master port), so rank 0 starts without waiting on anyone and every worker
// waits for that port. vLLM's server on rank 0 then blocks on its own until the
// workers have joined, which is why the leader needs no start-order help.
import { LlmgwError } from '../../errors.js';
import { hostPort } from './address.js';
import { sharedEnv, withOverrides } from './env.js';
import type { Rendezvous, ShardSpec } from '../../messages/shard-spec.js';
import type { LaunchCommand, LaunchOptions, WaitFor } from './shard-spec.js';

/** The commands of one vLLM shard, in start order. The spec must have passed validateShard. */
export function vllmCommands(spec: ShardSpec, opts: LaunchOptions): LaunchCommand[] {
  if (spec.ranks === 1) {
    return [{ argv: serveArgv(spec, opts, []), env: withOverrides(spec, sharedEnv(spec)), servesHttp: true }];
  }
  const leader = required(spec, 'leader', spec.leader);
  const nodeIp = required(spec, 'nodeIp', spec.nodeIp);
  // Each node its own: vLLM (and under Ray, the workers the raylet spawns) identify the
  // node by it. The leader's address on a worker makes two nodes claim one identity.
  const env: Record<string, string> = { ...sharedEnv(spec), VLLM_HOST_IP: nodeIp };
  const wait: WaitFor = { host: leader.ip, port: leader.port, timeoutMs: opts.rendezvousTimeoutMs };
  switch (spec.launchMode) {
    case 'ray':
      return rayCommands(spec, opts, leader, nodeIp, env, wait);
    case 'mp':
      return [mpCommand(spec, opts, leader, env, wait)];
    default:
      throw new LlmgwError('LLMGW_SHARD_INVALID', `vllm: launch mode '${String(spec.launchMode)}' is not ray or mp`);
  }
}

/**
 * Rank 0: a Ray head (sidecar), then `vllm serve` against it, which is the shard.
 * Rank k: the Ray join and nothing else; the cluster lends its GPUs to rank 0's server.
 *
 * Both Ray processes carry the full NCCL environment: vLLM's GPU workers are spawned by
 * the raylet and inherit its environment, not the server's.
 */
function rayCommands(
  spec: ShardSpec,
  opts: LaunchOptions,
  leader: Rendezvous,
  nodeIp: string,
  env: Record<string, string>,
  wait: WaitFor,
): LaunchCommand[] {
  const numGpus = `--num-gpus=${spec.gpus.length}`;
  const head = hostPort(leader.ip, leader.port);
  if (spec.rank !== 0) {
    const join = [opts.ray, 'start', '--block', `--address=${head}`, `--node-ip-address=${nodeIp}`, numGpus];
    return [{ argv: join, env: withOverrides(spec, env), servesHttp: false, waitFor: wait }];
  }
  const start = [opts.ray, 'start', '--block', '--head', `--node-ip-address=${nodeIp}`, `--port=${leader.port}`, numGpus];
  return [
    { argv: start, env: withOverrides(spec, env), servesHttp: false },
    {
      argv: serveArgv(spec, opts, ['--distributed-executor-backend', 'ray']),
      // This replica's head, not whichever cluster `ray start` last recorded on the node.
      env: withOverrides(spec, { ...env, RAY_ADDRESS: head }),
      servesHttp: true,
      // Its own sidecar, never a worker: the server claims GPUs from a cluster that must exist.
      waitFor: wait,
    },
  ];
}

/** Every rank runs `vllm serve`; rank 0 hosts the master port and the API, the others are headless. */
function mpCommand(spec: ShardSpec, opts: LaunchOptions, leader: Rendezvous, env: Record<string, string>, wait: WaitFor): LaunchCommand {
  const dist = [
    '--distributed-executor-backend', 'mp',
    '--nnodes', String(spec.ranks),
    '--node-rank', String(spec.rank),
    '--master-addr', leader.ip,
    '--master-port', String(leader.port),
  ];
  if (spec.rank === 0) return { argv: serveArgv(spec, opts, dist), env: withOverrides(spec, env), servesHttp: true };
  return { argv: serveArgv(spec, opts, [...dist, '--headless']), env: withOverrides(spec, env), servesHttp: false, waitFor: wait };
}

/** `vllm serve <model> …`: what the spec decides, then the distributed flags, then the operator's extras. */
function serveArgv(spec: ShardSpec, opts: LaunchOptions, dist: readonly string[]): string[] {
  const argv = [
    opts.vllm, 'serve', spec.model,
    '--served-model-name', spec.servedName,
    '--host', spec.httpHost ?? '0.0.0.0',
    '--port', String(spec.httpPort),
    '--tensor-parallel-size', String(spec.tp),
  ];
  if (spec.pp > 1) argv.push('--pipeline-parallel-size', String(spec.pp));
  argv.push(...dist);
  if (spec.dtype !== undefined) argv.push('--dtype', spec.dtype);
  if (spec.quantization !== undefined) argv.push('--quantization', spec.quantization);
  argv.push(...(spec.extraArgs ?? []));
  return argv;
}

function required<T>(spec: ShardSpec, field: string, value: T | undefined): T {
  if (value === undefined) {
    throw new LlmgwError('LLMGW_SHARD_INVALID', `vllm: a ${spec.ranks}-node shard has no ${field}; validate the spec first`);
  }
  return value;
}
