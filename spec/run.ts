// Runs every spec (`npm test`). uvu's own CLI would hang forever on a server or worker
// a spec forgot to close; here a leak fails the run and names what was left open.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'uvu/parse';
import { run } from 'uvu/run';

// Specs assert on behaviour, not logs; LLMGW_LOG_LEVEL=debug npm test shows them.
process.env.LLMGW_LOG_LEVEL ??= 'silent';

const dir = fileURLToPath(new URL('.', import.meta.url));
const only = process.argv[2]; // optional: a pattern to run a subset, e.g. `runtime/`

let out = '';
const write = process.stdout.write.bind(process.stdout);
process.stdout.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
  out += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString();
  return write(chunk, ...rest);
}) as typeof process.stdout.write;

const { suites } = await parse(dir, /\.spec\.js$/);
// Specs take test/suite from support/uvu.js, which keeps uvu's report readable when a
// spec throws one of our errors; a direct import would lose that silently.
const direct = suites.filter((s) => /from ['"]uvu['"]/.test(readFileSync(s.file, 'utf8')));
if (direct.length > 0) throw new Error(`import test/suite from spec/support/uvu.js, not 'uvu': ${direct.map((s) => s.name).join(', ')}`);
await run(only ? suites.filter((s) => s.name.includes(only)) : suites, { bail: false });

// uvu prints Total/Passed/Skipped; restate them as the one line CI tools read.
const plain = out.replace(/\x1b\[[0-9;]*m/g, '');
const total = Number(/Total:\s+(\d+)/.exec(plain)?.[1] ?? 0);
const passed = Number(/Passed:\s+(\d+)/.exec(plain)?.[1] ?? 0);
const skipped = Number(/Skipped:\s+(\d+)/.exec(plain)?.[1] ?? 0);
process.stdout.write = write;
console.log(`${passed} passed, ${total - passed - skipped} failed${skipped ? `, ${skipped} skipped` : ''}`);
if (total === 0) process.exitCode = 1;

// Everything should be closed now; give stragglers a moment, then call it a leak.
setTimeout(() => {
  const open = process.getActiveResourcesInfo().filter((r) => r !== 'TTYWrap' && r !== 'Timeout');
  console.error(`specs left resources open: ${open.join(', ')}`);
  process.exit(1);
}, 5_000).unref();
