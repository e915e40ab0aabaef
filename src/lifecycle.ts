import type { Logger } from './log.js';

/**
 * Exits 0 once `close` has finished after the first SIGTERM or SIGINT, 1 if it fails.
 * `note` says what stopping means for this role (e.g. that engines keep running).
 */
export function stopOnSignals(close: () => Promise<void>, log: Logger, note = 'signal received'): void {
  let stopping = false;
  const stop = (signal: string): void => {
    // Ctrl-C under `npm start` arrives twice, from the terminal and forwarded by npm: a
    // repeat must not cut the orderly shutdown short (it is bounded by its own timeouts).
    if (stopping) return;
    stopping = true;
    log.info(note, { signal });
    close().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error('shutdown failed', { error: err });
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}
