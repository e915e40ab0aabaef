// SGLang: one `python -m sglang.launch_server` per rank, the same command on every node
// but for `--node-rank`. Rank 0 opens the `--dist-init-addr` rendezvous and alone serves
// the OpenAI API; the other ranks wait for that address before they start.
import { hostPort } from './address.js';
import { sharedEnv, withOverrides } from './env.js';
import type { ShardSpec } from '../../messages/shard-spec.js';
import type { LaunchCommand, LaunchOptions } from './shard-spec.js';

/** The commands of one SGLang shard (always one). The spec must have passed validateShard. */
export function sglangCommands(spec: ShardSpec, opts: LaunchOptions): LaunchCommand[] {
  // `--tp-size` and `--pp-size` are the names SGLang registers; `--tp` only works as an
  // argparse abbreviation.
  const argv = [
    opts.python, '-m', 'sglang.launch_server',
    '--model-path', spec.model,
    '--served-model-name', spec.servedName,
    '--tp-size', String(spec.tp),
  ];
  if (spec.pp > 1) argv.push('--pp-size', String(spec.pp));
  const leader = spec.ranks > 1 ? spec.leader : undefined;
  if (leader !== undefined) {
    argv.push('--dist-init-addr', hostPort(leader.ip, leader.port), '--nnodes', String(spec.ranks), '--node-rank', String(spec.rank));
  }
  argv.push('--host', spec.httpHost ?? '0.0.0.0', '--port', String(spec.httpPort), '--enable-metrics');
  if (spec.dtype !== undefined) argv.push('--dtype', spec.dtype);
  if (spec.quantization !== undefined) argv.push('--quantization', spec.quantization);
  argv.push(...(spec.extraArgs ?? []));

  const env = withOverrides(spec, sharedEnv(spec));
  if (leader === undefined || spec.rank === 0) return [{ argv, env, servesHttp: spec.rank === 0 }];
  return [{ argv, env, servesHttp: false, waitFor: { host: leader.ip, port: leader.port, timeoutMs: opts.rendezvousTimeoutMs } }];
}
