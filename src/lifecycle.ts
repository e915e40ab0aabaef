import type { Logger } from './log.js';

/**
 * Exits 0 once `close` has finished after the first SIGTERM or SIGINT, 1 if it fails.
 * `note` says what stopping means for this role (e.g. that engines keep running).
 */
export function stopOnSignals(close: () => Promise<void>, log: Logger, note = 'signal received'): void {
  const stop = (signal: string): void => {
    log.info(note, { signal });
    close().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error('shutdown failed', { error: err });
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}
