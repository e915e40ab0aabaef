// The agent's own config (agent.yaml): small, and apart from the server's llmgw.yaml
// because one runs on every GPU node and the other once. Same conventions: a JSON
// Schema that is the source of truth, snake_case keys, defaults in the schema.
import { DEFAULT_LAUNCH_OPTIONS } from '../engines/index.js';
import { DEFAULT_NVIDIA_SMI, SYSFS_INFINIBAND } from '../discovery/index.js';
import { HOST_PORT_PATTERN, HTTP_URL_PATTERN, LOG_LEVELS, int, list, ms, object, str, type SchemaNode } from '../../config/schema.js';
import type { LogLevel } from '../../config/types.js';

/** Paths of the PEM files of the agent's side of the mTLS stream. */
export interface AgentTlsPaths {
  readonly ca: string;
  readonly cert: string;
  readonly key: string;
}

export interface AgentConfig {
  /** Who this node is to the control plane; its client certificate must name it. */
  readonly node_id: string;
  /** The control plane's agent port; unset, the agent runs standalone. */
  readonly server?: string;
  /** The management-network address engines bind and other nodes reach. */
  readonly mgmt_addr: string;
  /** The interface mgmt_addr is on; '' when it is on none this machine lists. */
  readonly mgmt_interface: string;
  readonly tls?: AgentTlsPaths;
  readonly insecure: boolean;
  readonly heartbeat_interval_ms: number;
  readonly listen: string;
  readonly state_dir: string;
  readonly log_level: LogLevel;
  readonly stop_timeout_ms: number;
  readonly drain_grace_ms: number;
  readonly rendezvous_timeout_ms: number;
  readonly ready_timeout_ms: number;
  readonly health_interval_ms: number;
  readonly settle_ms: number;
  readonly watch_interval_ms: number;
  readonly output_lines: number;
  readonly nvidia_smi: string;
  readonly ib_root: string;
  readonly no_gpu: boolean;
  readonly fabrics: Readonly<Record<string, readonly string[]>>;
  readonly engines: { readonly vllm: string; readonly python: string; readonly ray: string };
}

export const DEFAULT_AGENT_LISTEN = '127.0.0.1:4100';

export const agentConfigSchema: SchemaNode = object(
  'llmgw agent configuration (llmgw run --role=agent --config agent.yaml).',
  {
    node_id: str("This node's id in the fleet; the client certificate must name it (CN or DNS SAN). Default: the hostname.", {
      minLength: 1,
    }),
    server: str('URL of the control plane\'s agent port (https://control:4002; http:// with insecure: true). Unset, the agent runs standalone, driven through its local interface.', {
      pattern: HTTP_URL_PATTERN,
    }),
    mgmt_addr: str('The management-network IP address engines bind and other nodes reach. Default: the first non-internal IPv4 address, or 127.0.0.1.', { minLength: 1 }),
    mgmt_interface: str('The interface mgmt_addr is on (eth0), which NCCL and Gloo bootstrap a multi-node replica over. Default: the interface that holds mgmt_addr.', {
      pattern: '^[A-Za-z0-9_.:-]{1,15}$',
    }),
    tls: object(
      "PEM files of the agent's side of the mTLS stream to the control plane.",
      {
        ca: str("The fleet's CA certificate: the control plane's certificate must chain to it.", { minLength: 1 }),
        cert: str("This node's client certificate, naming node_id.", { minLength: 1 }),
        key: str("The client certificate's private key.", { minLength: 1 }),
      },
      { required: ['ca', 'cert', 'key'] },
    ),
    insecure: { type: 'boolean', description: 'Dial the control plane in plaintext HTTP/2 (an http:// server), on a trusted network only; instead of tls.', default: false },
    heartbeat_interval_ms: ms('Between heartbeats on the stream to the control plane, in ms.', 5_000),
    listen: str('HOST:PORT of the local control interface. Loopback only: it has no authentication and starts processes.', {
      pattern: HOST_PORT_PATTERN,
      default: DEFAULT_AGENT_LISTEN,
    }),
    state_dir: str('Directory of the per-shard state files and output logs; what lets a restarted agent adopt running engines.', {
      minLength: 1,
      default: '.llmgw-state/agent',
    }),
    log_level: { type: 'string', description: 'Log level.', enum: [...LOG_LEVELS], default: 'info' },
    stop_timeout_ms: ms('How long a process group gets after SIGTERM before SIGKILL, in ms (engines free GPU memory on the way out).', 60_000),
    drain_grace_ms: ms('How long stopping a ready shard waits for its in-flight requests to finish before signalling it, in ms.', 30_000),
    rendezvous_timeout_ms: ms("How long a worker rank waits for its leader's rendezvous address to accept connections, in ms.", DEFAULT_LAUNCH_OPTIONS.rendezvousTimeoutMs),
    ready_timeout_ms: ms('How long the leader may take to list the served name in /v1/models once started, in ms (a 70B model loads for minutes).', 1_800_000),
    health_interval_ms: ms('Between readiness probes of a loading engine, in ms.', 2_000),
    settle_ms: ms('How long a rank that serves no HTTP must stay up to count as ready, in ms.', 5_000),
    watch_interval_ms: ms('Between liveness checks of engines adopted from a previous agent, in ms.', 1_000),
    output_lines: int('How many lines of engine output a failure report carries.', 1, { maximum: 10_000, default: 50 }),
    nvidia_smi: str('Path to nvidia-smi.', { minLength: 1, default: DEFAULT_NVIDIA_SMI }),
    ib_root: str('The sysfs InfiniBand directory.', { minLength: 1, default: SYSFS_INFINIBAND }),
    no_gpu: { type: 'boolean', description: 'Skip GPU discovery, on a node without GPUs.', default: false },
    fabrics: {
      type: 'object',
      description: 'Fabric labels: fabric name → the HCAs of this node on it (ib-a: [mlx5_0, mlx5_1]). Nothing on the wire says which adapters reach which, so they are explicit.',
      additionalProperties: list('The HCAs on this fabric.', str('An HCA name (mlx5_0).', { minLength: 1 })),
      default: {},
    },
    engines: object(
      'Where the engines are installed.',
      {
        vllm: str('The vllm executable.', { minLength: 1, default: DEFAULT_LAUNCH_OPTIONS.vllm }),
        python: str("The SGLang environment's python (python -m sglang.launch_server).", { minLength: 1, default: DEFAULT_LAUNCH_OPTIONS.python }),
        ray: str('The ray executable (vLLM Ray launch mode).', { minLength: 1, default: DEFAULT_LAUNCH_OPTIONS.ray }),
      },
      { default: {} },
    ),
  },
  { $schema: 'http://json-schema.org/draft-07/schema#', title: 'agent.yaml' },
);
