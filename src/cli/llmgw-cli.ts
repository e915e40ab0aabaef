// The clipanion CLI as llmgw presents it: option values named in help and errors, and
// colours only for a person at a terminal.
import { Builtins, Cli } from 'clipanion';
import { VERSION } from '../version.js';
import { AgentInventoryCommand } from './commands/agent-inventory.js';
import { ConfigCheckCommand } from './commands/config-check.js';
import { ConfigSchemaCommand } from './commands/config-schema.js';
import { CtlActorsCommand } from './commands/ctl-actors.js';
import { CtlAdmissionCommand } from './commands/ctl-admission.js';
import { CtlEndpointsCommand } from './commands/ctl-endpoints.js';
import { CtlExplainPlacementCommand } from './commands/ctl-explain-placement.js';
import { CtlLogsCommand } from './commands/ctl-logs.js';
import { CtlModelsCommand } from './commands/ctl-models.js';
import { CtlCordonCommand, CtlDrainCommand, CtlUncordonCommand } from './commands/ctl-node-commands.js';
import { CtlNodesCommand } from './commands/ctl-nodes.js';
import { CtlReloadCommand } from './commands/ctl-reload.js';
import { CtlReplicasCommand } from './commands/ctl-replicas.js';
import { CtlKeysCreateCommand, CtlKeysListCommand, CtlKeysRevokeCommand, CtlKeysRotateCommand, CtlKeysShowCommand } from './commands/ctl-tenancy-keys.js';
import { CtlLimitsSetCommand, CtlLimitsShowCommand } from './commands/ctl-tenancy-limits.js';
import {
  CtlOrgsCreateCommand,
  CtlOrgsListCommand,
  CtlOrgsShowCommand,
  CtlProjectsCreateCommand,
  CtlProjectsListCommand,
  CtlProjectsShowCommand,
  CtlTeamsCreateCommand,
  CtlTeamsListCommand,
  CtlTeamsShowCommand,
} from './commands/ctl-tenancy-tree.js';
import { CtlAuditCommand, CtlUsageCommand } from './commands/ctl-tenancy-usage.js';
import { RunCommand } from './commands/run.js';
import { VersionCommand } from './commands/version.js';

/**
 * What each option's value is, as help shows it (`--role server|agent|sim`). clipanion
 * has no such field and prints `#0`; a spec checks that every option has a name here.
 */
export const VALUE_NAMES: Readonly<Record<string, string>> = {
  '--role': 'server|agent|sim',
  '--config': 'FILE',
  '--listen': 'HOST:PORT',
  '--admin-listen': 'HOST:PORT',
  '--model': 'NAME',
  '--speed': 'FACTOR',
  '--flavor': 'vllm|sglang',
  '--seed': 'N',
  '--max-num-seqs': 'N',
  '--num-gpu-blocks': 'N',
  '--max-model-len': 'TOKENS',
  '--max-num-batched-tokens': 'TOKENS',
  '--gauges': 'live|step',
  '--gauge-lag-ms': 'MS',
  '--scheduling-policy': 'fcfs|priority',
  '--step-us': 'STEP,PREFILL,DECODE',
  '--poison-marker': 'TEXT',
  '--admin': 'URL|HOST:PORT',
  '--token': 'TOKEN',
  '--tail': 'N',
  '--nvidia-smi': 'PATH',
  '--ib-root': 'DIR',
  '--fabric': 'NAME=HCA,HCA',
  '--org': 'ORG',
  '--team': 'TEAM',
  '--project': 'PROJECT',
  '--key': 'KEY',
  '--name': 'NAME',
  '--expires-in': 'DURATION',
  '--grace': 'DURATION',
  '--rpm': 'N|none',
  '--tpm': 'N|none',
  '--budget': 'UNITS|none',
  '--period': 'day|month',
  '--models': 'A,B|none',
  '--band': 'BAND|none',
  '--profile': 'PROFILE|none',
  '--by': 'key|project|team|org|model',
  '--since': 'TIME',
  '--until': 'TIME',
  '--limit': 'N',
};

const PLACEHOLDER = /(-[\w-]+(?:,-[\w-]+)*) #0/g;

function nameValues(text: string): string {
  return text.replace(PLACEHOLDER, (all, names: string) => {
    const value = names.split(',').map((n) => VALUE_NAMES[n]).find((v) => v !== undefined);
    return value === undefined ? all : `${names} ${value}`;
  });
}

/** Colours only on a terminal, and never with NO_COLOR set (https://no-color.org). */
export function wantsColour(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv): boolean {
  return stream.isTTY === true && (env.NO_COLOR ?? '') === '';
}

interface Usage {
  usage: string;
  options: { definition: string; description: string; required: boolean }[];
}

export class LlmgwCli extends Cli {
  constructor(colours: boolean) {
    super({ binaryLabel: 'llmgw', binaryName: 'llmgw', binaryVersion: VERSION, enableColors: colours });
  }

  // Help builds every usage line and option list here, before it pads the columns.
  protected override getUsageByIndex(n: number, opts?: { detailed?: boolean; inlineOptions?: boolean }): Usage {
    const { usage, options } = super.getUsageByIndex(n, opts);
    return { usage: nameValues(usage), options: options.map((o) => ({ ...o, definition: nameValues(o.definition) })) };
  }

  // A syntax error quotes the usage lines it considered, built without the hook above.
  override error(error: unknown, opts?: Parameters<Cli['error']>[1]): string {
    return nameValues(super.error(error, opts));
  }
}

/** The `llmgw` command line with every command registered. */
export function createCli(colours = wantsColour(process.stdout, process.env)): LlmgwCli {
  const cli = new LlmgwCli(colours);
  for (const c of [
    Builtins.HelpCommand,
    RunCommand,
    CtlActorsCommand,
    CtlEndpointsCommand,
    CtlAdmissionCommand,
    CtlNodesCommand,
    CtlModelsCommand,
    CtlReplicasCommand,
    CtlExplainPlacementCommand,
    CtlCordonCommand,
    CtlUncordonCommand,
    CtlDrainCommand,
    CtlLogsCommand,
    CtlReloadCommand,
    CtlOrgsCreateCommand,
    CtlOrgsListCommand,
    CtlOrgsShowCommand,
    CtlTeamsCreateCommand,
    CtlTeamsListCommand,
    CtlTeamsShowCommand,
    CtlProjectsCreateCommand,
    CtlProjectsListCommand,
    CtlProjectsShowCommand,
    CtlKeysCreateCommand,
    CtlKeysListCommand,
    CtlKeysShowCommand,
    CtlKeysRevokeCommand,
    CtlKeysRotateCommand,
    CtlLimitsShowCommand,
    CtlLimitsSetCommand,
    CtlUsageCommand,
    CtlAuditCommand,
    ConfigCheckCommand,
    ConfigSchemaCommand,
    VersionCommand,
    AgentInventoryCommand,
  ]) {
    cli.register(c);
  }
  return cli;
}
