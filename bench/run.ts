// `npm run bench [-- <suite>...]`: runs the named benchmark suites (all when none is
// named) and prints one table per suite. Suites are loaded only when selected, so one
// suite's setup (threads, sockets, child processes) never runs for another.
import { machineInfo, type Suite } from './harness.js';

const suites: Record<string, () => Promise<Suite>> = {
  runtime: async () => (await import('./runtime.js')).suite,
  pick: async () => (await import('./pick.js')).suite,
  overhead: async () => (await import('./overhead.js')).suite,
  quality: async () => (await import('./quality.js')).suite,
  admission: async () => (await import('./admission.js')).suite,
  'admission-bound': async () => (await import('./admission-bound.js')).suite,
  placement: async () => (await import('./placement.js')).suite,
  fleet: async () => (await import('./fleet.js')).suite,
  'tenancy-auth': async () => (await import('./tenancy-auth.js')).suite,
  'usage-writer': async () => (await import('./usage-writer.js')).suite,
};

async function main(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h') || argv.includes('--list')) {
    console.log('usage: node dist/bench/run.js [suite...]\nsuites:');
    for (const load of Object.values(suites)) {
      const s = await load();
      console.log(`  ${s.name.padEnd(12)} ${s.description}`);
    }
    return 0;
  }
  const unknown = argv.filter((a) => !(a in suites));
  if (unknown.length > 0) {
    console.error(`unknown benchmark suite ${unknown.map((u) => `'${u}'`).join(', ')}; have: ${Object.keys(suites).join(', ')}`);
    return 2;
  }
  const selected = argv.length > 0 ? [...new Set(argv)] : Object.keys(suites);
  for (const line of machineInfo()) console.log(line);
  for (const name of selected) {
    const suite = await suites[name]!();
    console.log(`\n=== ${suite.name}: ${suite.description}`);
    const t0 = performance.now();
    await suite.run();
    console.log(`(${suite.name} took ${((performance.now() - t0) / 1000).toFixed(1)} s)`);
  }
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  },
);
