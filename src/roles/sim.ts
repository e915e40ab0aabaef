// The sim role: one simulated engine in its own process, on the address it is given.
import { createLogger } from '../log.js';
import { listenFailed } from '../net/http-listen.js';
import { startSimEngine, type SimEngineOptions } from '../sim/index.js';

const log = createLogger('sim');

/** Serves one simulated engine until SIGTERM or SIGINT, then closes it and exits 0. `listen` is the address as given, for errors. */
export async function runSim(opts: SimEngineOptions, listen: string): Promise<void> {
  process.title = `llmgw sim ${opts.model}`;
  const sim = await startSimEngine(opts).catch((err: unknown) => {
    throw isErrno(err) ? listenFailed(err, listen, opts.port, { key: '--listen' }) : err;
  });
  // One line on stdout that scripts and specs wait for; the same as a log line for collectors.
  process.stdout.write(`llmgw sim ${opts.model} listening on ${sim.url}\n`);
  log.info('listening', { url: sim.url, model: opts.model, pid: process.pid });
  const stop = (): void => {
    log.info('signal received; closing the simulated engine');
    void sim.close().then(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

function isErrno(err: unknown): err is NodeJS.ErrnoException {
  return err instanceof Error && typeof (err as NodeJS.ErrnoException).syscall === 'string';
}
