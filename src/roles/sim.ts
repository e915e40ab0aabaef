// The sim role: one simulated engine in its own process, on the address it is given.
import { createLogger } from '../log.js';
import { startSimEngine, type SimEngineOptions } from '../sim/index.js';

const log = createLogger('sim');

/** Serves one simulated engine until SIGTERM or SIGINT, then closes it and exits 0. */
export async function runSim(opts: SimEngineOptions): Promise<void> {
  const sim = await startSimEngine(opts);
  // One line on stdout that scripts and specs wait for.
  process.stdout.write(`llmgw sim ${opts.model} listening on ${sim.url}\n`);
  const stop = (): void => {
    log.info('signal received; closing the simulated engine');
    void sim.close().then(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}
