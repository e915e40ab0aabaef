#!/usr/bin/env node
import { Builtins, Cli } from 'clipanion';
import { VERSION } from '../version.js';
import { AgentInventoryCommand } from './commands/agent-inventory.js';
import { ConfigCheckCommand } from './commands/config-check.js';
import { ConfigSchemaCommand } from './commands/config-schema.js';
import { CtlActorsCommand } from './commands/ctl-actors.js';
import { CtlAdmissionCommand } from './commands/ctl-admission.js';
import { CtlEndpointsCommand } from './commands/ctl-endpoints.js';
import { RunCommand } from './commands/run.js';
import { VersionCommand } from './commands/version.js';
import { hoistCtlOptions } from './ctl-argv.js';

const cli = new Cli({ binaryLabel: 'llmgw', binaryName: 'llmgw', binaryVersion: VERSION });
cli.register(Builtins.HelpCommand);
cli.register(RunCommand);
cli.register(CtlActorsCommand);
cli.register(CtlEndpointsCommand);
cli.register(CtlAdmissionCommand);
cli.register(ConfigCheckCommand);
cli.register(ConfigSchemaCommand);
cli.register(VersionCommand);
cli.register(AgentInventoryCommand);

// A command that failed exits now, whatever it left open: a role that could not start
// (a busy port) must not linger on a worker thread or a pooled socket.
void cli.run(hoistCtlOptions(process.argv.slice(2))).then((code) => {
  process.exitCode = code;
  if (code !== 0) process.exit(code);
});
