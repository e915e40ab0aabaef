import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, posix, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as assert from 'uvu/assert';
import { suite } from './support/uvu.js';

// The direction of imports between the folders of src/, read from the TypeScript sources
// (the compiled JavaScript has lost its type-only imports, which count too).
//
// - `messages` is a leaf of protocol types every layer imports: it imports only other
//   messages, the runtime's protocol typing (`Ask`, `Address`) and the error shape that
//   replies carry (`errors.ts`).
// - The domains (accounting, router, agent, config, sim, net, tasks, tenancy) import no actor shell, no HTTP
//   port and no composition root: actors and ports are built on the domains, never the
//   reverse.
// - The roles borrow nothing from each other: the agent imports no data port, router,
//   admin port or server code; the simulated engine nothing of the gateway or the agent;
//   the router nothing of the agent. What they share lives in net/, messages/, config/.
// - The runtime imports no domain: only itself, errors and the logger.

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

type Rule = { what: string; applies: (from: string) => boolean; allows: (to: string) => boolean };

const under = (...folders: string[]) => (p: string) => folders.some((f) => p === f || p.startsWith(`${f}/`));

const DOMAINS = ['accounting', 'router', 'agent', 'config', 'sim', 'net', 'tasks', 'tenancy'];
const SHELLS_AND_PORTS = under('actors', 'dataport', 'admin', 'server', 'roles', 'cli');

export const RULES: Rule[] = [
  {
    what: 'messages imports only messages, runtime/protocol.ts and errors.ts',
    applies: under('messages'),
    allows: (to) => under('messages')(to) || to === 'runtime/protocol.ts' || to === 'errors.ts',
  },
  {
    what: 'a domain imports no actor, port or role',
    applies: under(...DOMAINS),
    allows: (to) => !SHELLS_AND_PORTS(to),
  },
  {
    what: 'the agent imports nothing of the gateway',
    applies: under('agent'),
    allows: (to) => !under('dataport', 'router', 'admin', 'server')(to),
  },
  {
    what: 'the simulated engine imports nothing of the gateway or the agent',
    applies: under('sim'),
    allows: (to) => !under('router', 'accounting', 'agent', 'dataport', 'admin')(to),
  },
  {
    what: 'the router imports nothing of the agent',
    applies: under('router'),
    allows: (to) => !under('agent')(to),
  },
  {
    what: 'the runtime imports no domain',
    applies: under('runtime'),
    allows: (to) => under('runtime')(to) || to === 'errors.ts' || to === 'log.ts',
  },
];

const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^'";]*?from\s*'([^']+)'|import\(\s*'([^']+)'\s*\)/g;

/** Every relative import of each file, as paths inside src/ with a `.ts` ending. */
export function importsOf(files: ReadonlyMap<string, string>): { from: string; to: string }[] {
  const out: { from: string; to: string }[] = [];
  for (const [from, text] of files) {
    for (const m of text.matchAll(IMPORT)) {
      const spec = m[1] ?? m[2]!;
      if (!spec.startsWith('.')) continue;
      out.push({ from, to: posix.normalize(posix.join(posix.dirname(from), spec)).replace(/\.js$/, '.ts') });
    }
  }
  return out;
}

export function violations(files: ReadonlyMap<string, string>): string[] {
  return importsOf(files).flatMap(({ from, to }) => RULES.filter((r) => r.applies(from) && !r.allows(to)).map((r) => `${from} imports ${to}: ${r.what}`));
}

function sources(dir: string): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.ts')) files.set(relative(dir, p).split('\\').join('/'), readFileSync(p, 'utf8'));
    }
  };
  walk(dir);
  return files;
}

const test = suite('architecture: imports go one way');

test('the sources are found and their imports read, type-only ones included', () => {
  const files = sources(SRC);
  assert.ok(files.size > 50, `read ${files.size} files under ${dirname(SRC)}`);
  const edges = importsOf(files);
  assert.ok(edges.some((e) => e.from === 'router/endpoint-table.ts' && e.to === 'messages/endpoints.ts'), 'a type-only import is seen');
  assert.ok(edges.some((e) => e.from === 'cli/commands/run.ts' && e.to.startsWith('roles/')), 'a dynamic import is seen');
});

test('no file of src/ breaks a rule', () => {
  assert.equal(violations(sources(SRC)), []);
});

test('a forbidden import added to any folder is caught', () => {
  const files = sources(SRC);
  const add = (file: string, line: string): string[] => violations(new Map([...files, [file, `${line}\n${files.get(file) ?? ''}`]]));
  assert.equal(add('messages/sim.ts', "import type { EndpointTable } from '../router/endpoint-table.js';"), [
    'messages/sim.ts imports router/endpoint-table.ts: messages imports only messages, runtime/protocol.ts and errors.ts',
  ]);
  assert.equal(add('router/catalog.ts', "import { accounting } from '../actors/accounting/accounting.js';"), [
    'router/catalog.ts imports actors/accounting/accounting.ts: a domain imports no actor, port or role',
  ]);
  assert.equal(add('agent/control-port.ts', "import { Scheduler } from '../router/scheduler/scheduler.js';"), [
    'agent/control-port.ts imports router/scheduler/scheduler.ts: the agent imports nothing of the gateway',
  ]);
  assert.equal(add('runtime/mailbox.ts', "import type { Config } from '../config/index.js';"), [
    'runtime/mailbox.ts imports config/index.ts: the runtime imports no domain',
  ]);
  assert.equal(add('sim/engine.ts', "export { createDataPort } from '../dataport/data-port.js';"), [
    'sim/engine.ts imports dataport/data-port.ts: a domain imports no actor, port or role',
    'sim/engine.ts imports dataport/data-port.ts: the simulated engine imports nothing of the gateway or the agent',
  ], 'a re-export counts');
  assert.equal(add('router/catalog.ts', "const { x } = await import('../agent/engines/index.js');"), [
    'router/catalog.ts imports agent/engines/index.ts: the router imports nothing of the agent',
  ], 'a dynamic import counts');
});

test.run();
