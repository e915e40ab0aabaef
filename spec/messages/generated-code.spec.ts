import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import * as assert from 'uvu/assert';
import { suite } from '../support/uvu.js';

// The generated code under src/messages/gen/ is committed; this regenerates it from
// proto/ into a temp folder with the same template and fails when the two differ, so a
// proto edit without `npm run proto` cannot land.

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const BIN = join(ROOT, 'node_modules', '.bin');
const GEN = 'src/messages/gen';

function filesUnder(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.set(relative(dir, p), readFileSync(p, 'utf8'));
    }
  };
  walk(dir);
  return out;
}

/** Runs `buf generate` with the repository's template into `out`, offline (local plugin only). */
async function generateInto(out: string, protoDir = 'proto'): Promise<Map<string, string>> {
  await promisify(execFile)(join(BIN, 'buf'), ['generate', protoDir, '--template', 'buf.gen.yaml', '--output', out], {
    cwd: ROOT,
    env: { ...process.env, PATH: `${BIN}:${process.env.PATH ?? ''}`, BUF_CACHE_DIR: join(out, '.buf-cache') },
  });
  return filesUnder(join(out, GEN));
}

const test = suite('generated protobuf code');

test('the committed code under src/messages/gen is what proto/ generates now', async () => {
  const tmp = mkdtempSync(join(tmpdir(), 'llmgw-gen-'));
  try {
    const fresh = await generateInto(tmp);
    const committed = filesUnder(join(ROOT, GEN));
    assert.ok(fresh.size > 0, 'buf generated nothing');
    assert.equal([...committed.keys()].sort(), [...fresh.keys()].sort(), 'the generated files differ: run npm run proto');
    for (const [file, text] of fresh) assert.ok(committed.get(file) === text, `${GEN}/${file} is stale: run npm run proto`);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});

test('a proto edit shows up as a difference (the comparison can fail)', async () => {
  const tmp = mkdtempSync(join(tmpdir(), 'llmgw-gen-'));
  try {
    const protoDir = join(tmp, 'proto');
    const file = join(protoDir, 'llmgw/agent/v1/agent.proto');
    const source = readFileSync(join(ROOT, 'proto/llmgw/agent/v1/agent.proto'), 'utf8');
    mkdirSync(join(protoDir, 'llmgw/agent/v1'), { recursive: true });
    writeFileSync(file, source.replace('message Heartbeat {\n  int64 unix_ms = 1;\n}', 'message Heartbeat {\n  int64 unix_ms = 1;\n  string note = 2;\n}'));
    const fresh = await generateInto(join(tmp, 'out'), protoDir);
    const committed = filesUnder(join(ROOT, GEN));
    assert.equal([...fresh.keys()].sort(), [...committed.keys()].sort());
    const edited = fresh.get('llmgw/agent/v1/agent_pb.ts')!;
    assert.ok(edited !== committed.get('llmgw/agent/v1/agent_pb.ts') && edited.includes('note: string'), 'an added field left the generated code unchanged');
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});

test.run();
