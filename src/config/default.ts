// The configuration the server runs on when it is given no --config (and no
// LLMGW_CONFIG): a small simulated fleet on loopback, so `llmgw run --role=server`
// answers an OpenAI client at once on a machine without GPUs. Two simulated nodes (real
// agents in-process, simulated nvidia-smi, the sim engine as vllm) take the replicas the
// control plane places. It is YAML text, not an object, so it goes through exactly the
// path a file does (parse, schema, cross-checks, environment) and can be printed as a
// starting point for a real file.

/** How problems in the embedded default are attributed. */
export const DEFAULT_CONFIG_SOURCE = '(embedded default)';

export const DEFAULT_CONFIG_YAML = `# llmgw embedded default: a simulated fleet of two 4-GPU nodes, no GPUs needed.
listen: "127.0.0.1:4000"
admin_listen: "127.0.0.1:4001"
agent_listen: "127.0.0.1:4002"
# The simulated nodes are agents inside this process, on loopback.
agent_insecure: true
control:
  # They register at once: no need to wait long for agents to report.
  settle_ms: 1000
models:
  - name: llmgw-sim
    aliases: [sim]
    scaling: { min: 2, max: 4 }
    profiles:
      - { name: h100-tp1, engine: vllm, gpu_class: h100-80g, tp: 1 }
simulate_nodes:
  - { name: sim-node-a, gpus: 4 }
  - { name: sim-node-b, gpus: 4 }
`;
