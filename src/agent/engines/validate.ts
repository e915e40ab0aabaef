// Checks a shard spec before anything is started. An engine that refuses a spec does so
// after minutes of loading, and some mistakes are never refused at all: a group that
// mixes GPU classes runs at the slowest card's pace, FP8 on Ampere falls back to a
// slower kernel, NCCL without its adapter list hangs on the first all-reduce.
//
// Every reason is collected, not just the first, and each names the field and values.
import { isIP } from 'node:net';
import { LlmgwError } from '../../errors.js';
import { RESERVED_ENV } from './env.js';
import { reservedFlagsIn } from './flags.js';
import { ENGINE_KINDS, VLLM_LAUNCH_MODES, type EngineKind, type ShardSpec } from '../../messages/shard-spec.js';

/** FP8 compute (as opposed to FP8 storage) needs Ada (8.9) or Hopper (9.0) and newer. */
export const FP8_MIN_COMPUTE_CAPABILITY = '8.9';

/** `fp8`, `fbgemm_fp8`, `ptpc_fp8`, `w8a8_fp8`, `modelopt_fp8`, … */
export function isFp8Quantization(quantization: string | undefined): boolean {
  return quantization !== undefined && /fp8/i.test(quantization);
}

/** `9.0` → [9, 0]; null for what nvidia-smi prints when it does not know (`[N/A]`). */
export function parseComputeCapability(text: string): readonly [number, number] | null {
  const m = /^(\d+)\.(\d+)$/.exec(text.trim());
  return m ? [Number(m[1]), Number(m[2])] : null;
}

function below(cc: readonly [number, number], min: readonly [number, number]): boolean {
  return cc[0] < min[0] || (cc[0] === min[0] && cc[1] < min[1]);
}

const isNonEmptyString = (v: unknown): v is string => typeof v === 'string' && v.trim() !== '';
const isPositiveInt = (v: unknown): v is number => Number.isInteger(v) && (v as number) > 0;
const isPort = (v: unknown): v is number => Number.isInteger(v) && (v as number) >= 1 && (v as number) <= 65535;
const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

const HCA_NAME = /^[A-Za-z0-9_.-]+(:\d+)?$/;
const IFACE_NAME = /^[A-Za-z0-9_.@-][A-Za-z0-9_.:@-]{0,14}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Every reason the spec cannot be launched; empty when it can. */
export function validateShard(spec: ShardSpec): string[] {
  const problems: string[] = [];
  const say = (msg: string): void => void problems.push(msg);

  if (!isNonEmptyString(spec.replica)) say('replica id is empty');
  if (!isNonEmptyString(spec.model)) say('model path is empty');
  if (!isNonEmptyString(spec.servedName)) say('served name is empty; readiness is /v1/models listing it');
  const engine: EngineKind | null = (ENGINE_KINDS as readonly string[]).includes(spec.engine) ? spec.engine : null;
  if (engine === null) say(`engine '${String(spec.engine)}' is not one of ${ENGINE_KINDS.join(', ')}`);

  // Parallelism and the node's share of it.
  const { tp, pp, ranks, rank } = spec;
  if (!isPositiveInt(tp)) say(`tp must be a positive integer, got ${String(tp)}`);
  if (!isPositiveInt(pp)) say(`pp must be a positive integer, got ${String(pp)}`);
  if (!isPositiveInt(ranks)) say(`ranks (nodes) must be a positive integer, got ${String(ranks)}`);
  if (!Number.isInteger(rank)) say(`rank must be an integer, got ${String(rank)}`);
  else if (isPositiveInt(ranks) && (rank < 0 || rank >= ranks)) say(`rank ${rank} is outside 0..${ranks - 1}`);

  const gpus = Array.isArray(spec.gpus) ? spec.gpus : [];
  if (gpus.length === 0) say('no GPUs are assigned to the shard on this node');
  const seen = new Set<number>();
  for (const g of gpus) {
    if (!Number.isInteger(g.index) || g.index < 0) say(`GPU index ${String(g.index)} is not a non-negative integer`);
    else if (seen.has(g.index)) say(`GPU ${g.index} is assigned twice`);
    else seen.add(g.index);
    if (!isNonEmptyString(g.class)) say(`GPU ${String(g.index)} has no class`);
  }
  const byClass = new Map<string, number[]>();
  for (const g of gpus) if (isNonEmptyString(g.class)) byClass.set(g.class, [...(byClass.get(g.class) ?? []), g.index]);
  if (byClass.size > 1) {
    const parts = [...byClass].map(([cls, idx]) => `${cls} (${idx.length === 1 ? 'GPU' : 'GPUs'} ${idx.join(', ')})`);
    say(`a tensor-parallel group may not mix GPU classes: ${parts.join(', ')}`);
  }

  if (isPositiveInt(tp) && isPositiveInt(pp) && isPositiveInt(ranks) && gpus.length > 0) {
    const total = tp * pp;
    if (total % ranks !== 0) {
      say(`tp ${tp} × pp ${pp} = ${plural(total, 'GPU')} cannot be split evenly over ${plural(ranks, 'node')}`);
    } else if (gpus.length * ranks !== total) {
      say(
        `${plural(ranks, 'node')} × ${plural(gpus.length, 'GPU')} = ${gpus.length * ranks}, but tp ${tp} × pp ${pp} = ${total}: ` +
          `each node needs ${total / ranks}`,
      );
    }
  }

  if (spec.quantization !== undefined && !isNonEmptyString(spec.quantization)) say('quantization is empty; leave it out instead');
  if (spec.dtype !== undefined && !isNonEmptyString(spec.dtype)) say('dtype is empty; leave it out instead');
  if (isFp8Quantization(spec.quantization)) {
    const min = parseComputeCapability(FP8_MIN_COMPUTE_CAPABILITY)!;
    const old: string[] = [];
    const unknown: string[] = [];
    for (const g of gpus) {
      const cc = typeof g.computeCapability === 'string' ? parseComputeCapability(g.computeCapability) : null;
      if (cc === null) unknown.push(`GPU ${g.index} (${g.class}) reports '${String(g.computeCapability)}'`);
      else if (below(cc, min)) old.push(`GPU ${g.index} (${g.class}) has ${g.computeCapability}`);
    }
    const needs = `quantization '${spec.quantization}' needs compute capability ${FP8_MIN_COMPUTE_CAPABILITY} or newer (Ada, Hopper)`;
    if (old.length > 0) say(`${needs}; ${old.join(', ')}`);
    if (unknown.length > 0) say(`${needs}, which cannot be confirmed: ${unknown.join(', ')}`);
  }

  // Ports and addresses.
  if (!isPort(spec.httpPort)) say(`HTTP port ${String(spec.httpPort)} is not a port (1-65535)`);
  if (spec.httpHost !== undefined && (!isNonEmptyString(spec.httpHost) || /\s/.test(spec.httpHost))) {
    say(`HTTP host '${spec.httpHost}' is not an address`);
  }

  if (isPositiveInt(ranks) && ranks > 1) {
    const where = `a ${ranks}-node shard`;
    const leader = spec.leader;
    if (leader === undefined || !isNonEmptyString(leader.ip)) {
      say(`${where} needs the leader's rendezvous address (rank 0's management IP and port)`);
    } else {
      if (!isReachableIp(leader.ip)) say(`leader address '${leader.ip}' is not an IP address other nodes can dial`);
      if (!isPort(leader.port)) say(`leader rendezvous port ${String(leader.port)} is not a port (1-65535)`);
    }
    if (!isNonEmptyString(spec.nodeIp)) say(`${where} needs this node's IP (Ray and vLLM identify each node by it)`);
    else if (!isReachableIp(spec.nodeIp)) say(`node IP '${spec.nodeIp}' is not an IP address other nodes can dial`);
    if (rank === 0 && leader !== undefined && isNonEmptyString(leader.ip) && isNonEmptyString(spec.nodeIp) && leader.ip !== spec.nodeIp) {
      say(`rank 0 hosts the rendezvous, so its node IP ${spec.nodeIp} must be the leader address ${leader.ip}`);
    }
    if (rank === 0 && leader !== undefined && isPort(leader.port) && leader.port === spec.httpPort) {
      say(`the rendezvous port ${leader.port} is also the HTTP port; rank 0 opens both`);
    }

    if (!isNonEmptyString(spec.mgmtInterface)) {
      say(`${where} needs the management interface: NCCL and Gloo bootstrap over it`);
    } else if (!IFACE_NAME.test(spec.mgmtInterface)) {
      say(`management interface '${spec.mgmtInterface}' is not an interface name`);
    }

    const t = spec.transport;
    if (t === undefined) {
      say(`${where} needs a transport: a fabric with its HCAs, or 'socket' to run NCCL over TCP on purpose`);
    } else if (t.kind === 'fabric') {
      if (!isNonEmptyString(t.fabric)) say('the fabric has no name');
      if (t.linkLayer !== 'InfiniBand' && t.linkLayer !== 'Ethernet') {
        say(`fabric link layer '${String(t.linkLayer)}' is not InfiniBand or Ethernet (RoCE)`);
      }
      const hcas = Array.isArray(t.hcas) ? t.hcas : [];
      if (hcas.length === 0) {
        say(
          `fabric '${t.fabric}' lists no HCAs on this node: NCCL would pick adapters itself, possibly on another fabric ` +
            `(use transport 'socket' to run without RDMA on purpose)`,
        );
      }
      const seenHca = new Set<string>();
      for (const h of hcas) {
        if (typeof h !== 'string' || !HCA_NAME.test(h)) say(`HCA '${String(h)}' is not an adapter name (mlx5_0, or mlx5_0:1 for a port)`);
        else if (seenHca.has(h)) say(`HCA ${h} is listed twice`);
        else seenHca.add(h);
      }
    } else if (t.kind !== 'socket') {
      say(`transport kind '${String((t as { kind: unknown }).kind)}' is not 'fabric' or 'socket'`);
    }

    if (engine === 'vllm') {
      if (spec.launchMode === undefined) {
        say(`a multi-node vLLM shard needs a launch mode: ${VLLM_LAUNCH_MODES.join(' or ')} (which works depends on the vLLM version)`);
      } else if (!(VLLM_LAUNCH_MODES as readonly string[]).includes(spec.launchMode)) {
        say(`launch mode '${String(spec.launchMode)}' is not one of ${VLLM_LAUNCH_MODES.join(', ')}`);
      }
    }
  }

  // What the operator may add: anything the spec does not already decide.
  const extra = spec.extraArgs ?? [];
  if (!Array.isArray(extra) || extra.some((a) => typeof a !== 'string')) say('extra args must be a list of strings');
  else if (engine !== null) for (const p of reservedFlagsIn(engine, extra)) say(p);

  for (const [name, value] of Object.entries(spec.env ?? {})) {
    if (!ENV_NAME.test(name)) say(`env name '${name}' is not a variable name`);
    else if (Object.hasOwn(RESERVED_ENV, name)) say(`env may not set ${name}: it comes from the shard spec (${RESERVED_ENV[name]})`);
    if (typeof value !== 'string') say(`env ${name} must be a string, got ${JSON.stringify(value)}`);
    else if (value.includes('\0')) say(`env ${name} contains a NUL byte`);
  }

  return problems;
}

/** Throws `LLMGW_SHARD_INVALID` with every reason, in `details.problems` too. */
export function assertValidShard(spec: ShardSpec): void {
  const problems = validateShard(spec);
  if (problems.length === 0) return;
  const who = `shard of replica ${String(spec.replica)} rank ${String(spec.rank)}`;
  throw new LlmgwError('LLMGW_SHARD_INVALID', `${who} cannot be launched: ${problems.join('; ')}`, { problems });
}

/** An IP literal that is not the unspecified address (0.0.0.0 or ::). */
function isReachableIp(ip: string): boolean {
  if (isIP(ip) === 0) return false;
  return ip !== '0.0.0.0' && !/^[0:]+$/.test(ip);
}
