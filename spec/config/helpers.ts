import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import { LlmgwError } from '../../src/errors.js';
import { parseConfig, type ConfigOverrides, type ConfigProblem } from '../../src/config/index.js';

/** A valid config to build broken ones from: three models, the third placed by profiles. */
export const BASE = `
listen: "127.0.0.1:4000"
agent_insecure: true
models:
  - name: llama-3.1-8b
    aliases: [llama-8b]
    fallbacks: [llama-3.3-70b]
  - name: llama-3.3-70b
    aliases: [llama]
  - name: qwen2.5-32b
    profiles:
      - name: h100-tp1
        gpu_class: h100-80g
        tp: 1
endpoints:
  - id: gpu-a-0
    url: http://10.0.0.5:8000
    models: [llama-3.1-8b, llama-3.3-70b]
simulate:
  - model: llama-3.1-8b
`;

/** The error a config fails with; fails the spec if it is accepted or fails otherwise. */
export function rejection(text: string, env: NodeJS.ProcessEnv = {}, overrides: ConfigOverrides = {}): LlmgwError {
  try {
    parseConfig(text, 'llmgw.yaml', env, overrides);
  } catch (err) {
    assert.instance(err, LlmgwError);
    const e = err as LlmgwError;
    assert.is(e.code, 'LLMGW_CONFIG_INVALID');
    return e;
  }
  return assert.unreachable('the config was accepted') as never;
}

/** The lines of the error a config fails with. */
export function problems(text: string, env: NodeJS.ProcessEnv = {}, overrides: ConfigOverrides = {}): string[] {
  const e = rejection(text, env, overrides);
  const lines = e.message.split('\n');
  assert.is((e.details?.problems as ConfigProblem[]).length, lines.length, 'details.problems matches the message');
  return lines;
}

/** A file under a fresh temp folder. */
export function tempFile(name: string, text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'llmgw-config-'));
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}
