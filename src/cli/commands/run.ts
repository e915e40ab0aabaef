import { Command, Option } from 'clipanion';
import { LlmgwError } from '../../errors.js';
import { parseHostPort } from '../../net/host-port.js';
import type { StepModel } from '../../sim/index.js';

const ROLES = 'server, agent, sim';
const DEFAULT_SIM_LISTEN = '127.0.0.1:8000';

/** `llmgw run --role=server|agent|sim`: one binary, one role per process. */
export class RunCommand extends Command {
  static override paths = [['run']];
  static override usage = Command.Usage({
    description: 'Run llmgw in one of its roles',
    details: `
      \`--role=server\` runs the data port, the router and the admin port. With no \`--config\` it starts on an embedded default that serves a simulated model, so an OpenAI client gets an answer at once.

      \`--role=agent\` runs the node agent: it supervises this node's engine processes and serves a local control interface (loopback, default 127.0.0.1:4100). Stopping the agent leaves the engines running; the next agent adopts them.

      \`--role=sim\` runs one simulated engine that speaks vLLM's OpenAI API and metrics (or SGLang's names with \`--flavor sglang\`).
    `,
    examples: [
      ['Start the server on its embedded default', 'llmgw run --role=server'],
      ['Start the server from a config file', 'llmgw run --role=server --config llmgw.yaml'],
      ['Start the node agent', 'llmgw run --role=agent --config agent.yaml'],
      ['Start a simulated engine', 'llmgw run --role=sim --listen 127.0.0.1:8001 --model llama-3.1-8b --speed 10'],
    ],
  });

  // Not `required` for clipanion: its error for a missing option is "Command not found".
  role = Option.String('--role', { description: 'server, agent or sim (required)' });
  config = Option.String('--config', { description: 'server: YAML config file (default: the embedded default); agent: agent.yaml (default: all defaults)' });
  listen = Option.String('--listen', { description: 'HOST:PORT to serve on (server: the data port; agent: the control interface)' });
  adminListen = Option.String('--admin-listen', { description: 'server: HOST:PORT of the admin port' });
  model = Option.String('--model', { description: 'sim: the served model name' });
  speed = Option.String('--speed', { description: 'sim: time factor; 10 runs ten times faster than a real GPU would (default 1)' });
  flavor = Option.String('--flavor', { description: 'sim: vllm or sglang metric names (default vllm)' });
  seed = Option.String('--seed', { description: 'sim: seed for deterministic output (default 0)' });
  maxNumSeqs = Option.String('--max-num-seqs', { description: 'sim: most sequences in one batch (default 256)' });
  numGpuBlocks = Option.String('--num-gpu-blocks', { description: 'sim: KV cache size in blocks of 16 tokens' });
  maxModelLen = Option.String('--max-model-len', { description: 'sim: longest prompt + completion in tokens' });
  maxNumBatchedTokens = Option.String('--max-num-batched-tokens', { description: 'sim: per-step token budget; 0 = none, every admitted prompt prefilled in one step as without chunked prefill (default 8192)' });
  gauges = Option.String('--gauges', { description: 'sim: live (queues as they are when scraped) or step (the last step\'s scheduler stats, as vLLM; default)' });
  gaugeLagMs = Option.String('--gauge-lag-ms', { description: 'sim: gauges change only every N ms, as SGLang\'s do (default 0: no lag)' });
  schedulingPolicy = Option.String('--scheduling-policy', { description: 'sim: fcfs (default) or priority: the waiting queue ordered by the request\'s priority field, lower first, as vLLM\'s' });
  stepUs = Option.String('--step-us', {
    description:
      'sim: step time in µs as PER_STEP,PER_PREFILL_TOKEN,PER_DECODE_TOKEN (default 5752.7,17.25,6: Llama-3.1-8B on an H100 under vLLM); a large first term is an engine bound by its host, whose steps cost about the same whatever the batch',
  });
  serverInfo = Option.Boolean('--server-info', true, { description: 'sim: with --flavor sglang, publish its settings at /server_info as SGLang does (default); --no-server-info: as a release that publishes none' });
  fragile = Option.Boolean('--fragile', false, { description: 'sim: exit on a request whose standard fields have wrong types or ranges, as a careless engine would (for testing what stands in front of it)' });
  poisonMarker = Option.String('--poison-marker', { description: 'sim: with --fragile, also exit on a valid request whose prompt contains this text' });

  override async execute(): Promise<number> {
    try {
      switch (this.role) {
        case 'server':
          return await this.runServer();
        case 'agent':
          return await this.runAgent();
        case 'sim':
          return await this.runSim();
        case undefined:
          throw new LlmgwError('LLMGW_INVALID_REQUEST', `--role is required: one of ${ROLES} (e.g. llmgw run --role=server)`);
        default:
          throw new LlmgwError('LLMGW_INVALID_REQUEST', `unknown role '${this.role}': expected one of ${ROLES}`);
      }
    } catch (err) {
      const e = LlmgwError.from(err);
      this.context.stderr.write(`llmgw: ${e.message}\n`);
      return 2;
    }
  }

  private async runServer(): Promise<number> {
    const { runServer } = await import('../../roles/server.js');
    await runServer({ configPath: this.config, listen: this.listen, adminListen: this.adminListen });
    return await waitForever();
  }

  private async runAgent(): Promise<number> {
    const { runAgent } = await import('../../roles/agent.js');
    await runAgent({ configPath: this.config, listen: this.listen });
    return await waitForever();
  }

  private async runSim(): Promise<number> {
    if (!this.model) throw new LlmgwError('LLMGW_INVALID_REQUEST', '--model is required with --role=sim');
    const { runSim } = await import('../../roles/sim.js');
    const listen = this.listen ?? DEFAULT_SIM_LISTEN;
    const { host, port } = parseHostPort(listen, '--listen');
    if (this.poisonMarker !== undefined && (!this.fragile || this.poisonMarker === '')) throw new LlmgwError('LLMGW_INVALID_REQUEST', '--poison-marker needs --fragile and a non-empty text');
    const flavor = this.flavor ?? 'vllm';
    if (flavor !== 'vllm' && flavor !== 'sglang') throw new LlmgwError('LLMGW_INVALID_REQUEST', `--flavor must be vllm or sglang, not '${flavor}'`);
    const gauges = this.gauges ?? 'step';
    if (gauges !== 'live' && gauges !== 'step') throw new LlmgwError('LLMGW_INVALID_REQUEST', `--gauges must be live or step, not '${gauges}'`);
    const schedulingPolicy = this.schedulingPolicy ?? 'fcfs';
    if (schedulingPolicy !== 'fcfs' && schedulingPolicy !== 'priority') throw new LlmgwError('LLMGW_INVALID_REQUEST', `--scheduling-policy must be fcfs or priority, not '${schedulingPolicy}'`);
    await runSim(
      {
      host,
      port,
      model: this.model,
      flavor,
      speed: positiveNumber(this.speed, '--speed') ?? 1,
      seed: integer(this.seed, '--seed') ?? 0,
      maxNumSeqs: integer(this.maxNumSeqs, '--max-num-seqs'),
      numGpuBlocks: integer(this.numGpuBlocks, '--num-gpu-blocks'),
      maxModelLen: integer(this.maxModelLen, '--max-model-len'),
      maxNumBatchedTokens: integer(this.maxNumBatchedTokens, '--max-num-batched-tokens'),
      gauges,
      gaugeLagMs: integer(this.gaugeLagMs, '--gauge-lag-ms'),
      schedulingPolicy,
      stepModel: stepModel(this.stepUs),
      serverInfo: this.serverInfo,
        fragile: this.fragile ? { poisonMarker: this.poisonMarker ?? null } : undefined,
      },
      listen,
    );
    return await waitForever();
  }
}

function waitForever(): Promise<number> {
  return new Promise(() => {});
}

function positiveNumber(v: string | undefined, flag: string): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new LlmgwError('LLMGW_INVALID_REQUEST', `${flag} must be a number > 0, not '${v}'`);
  return n;
}

function stepModel(v: string | undefined): StepModel | undefined {
  if (v === undefined) return undefined;
  const terms = v.split(',').map(Number);
  if (terms.length !== 3 || terms.some((t) => !Number.isFinite(t) || t < 0) || terms[0] === 0) {
    throw new LlmgwError('LLMGW_INVALID_REQUEST', `--step-us must be three numbers ≥ 0 (µs per step > 0, per prefill token, per decode token), such as 5752.7,17.25,6, not '${v}'`);
  }
  return { beta0: terms[0]!, beta1: terms[1]!, beta2: terms[2]! };
}

function integer(v: string | undefined, flag: string): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new LlmgwError('LLMGW_INVALID_REQUEST', `${flag} must be a whole number ≥ 0, not '${v}'`);
  return n;
}
