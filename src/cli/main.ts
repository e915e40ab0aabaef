#!/usr/bin/env node
import { hoistCtlOptions } from './ctl-argv.js';
import { createCli } from './llmgw-cli.js';

// A command that failed exits now, whatever it left open: a role that could not start
// (a busy port) must not linger on a worker thread or a pooled socket.
void createCli()
  .run(hoistCtlOptions(process.argv.slice(2)))
  .then((code) => {
    process.exitCode = code;
    if (code !== 0) process.exit(code);
  });
