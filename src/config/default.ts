// The configuration the server runs on when it is given no --config (and no
// LLMGW_CONFIG): one simulated model on loopback, so `llmgw run --role=server` answers an
// OpenAI client at once. It is YAML text, not an object, so it goes through exactly the
// path a file does (parse, schema, cross-checks, environment) and can be printed as a
// starting point for a real file.

/** How problems in the embedded default are attributed. */
export const DEFAULT_CONFIG_SOURCE = '(embedded default)';

export const DEFAULT_CONFIG_YAML = `# llmgw embedded default: one simulated model, no GPUs needed.
listen: "127.0.0.1:4000"
admin_listen: "127.0.0.1:4001"
models:
  - name: llmgw-sim
    aliases: [sim]
simulate:
  - model: llmgw-sim
    replicas: 2
    speed: 1
`;
