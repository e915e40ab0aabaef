import { Counter, Gauge, type Registry } from 'prom-client';
import type { UsageWriter } from './usage-writer.js';

// The usage writer's metrics, on the tenancy thread's registry: how far the store is
// behind the journal (a backlog that grows means usage queries and budgets at the next
// start wait on it), and what it stored or had to skip.

export interface UsageWriterSource {
  writer: UsageWriter | null;
}

// A restarted store actor finds its metrics already registered on the thread: it swaps
// in its writer, and the counters go on from what the last one counted.
const sourceByRegistry = new WeakMap<Registry, UsageWriterSource>();

/** The metrics of whichever writer is set on the returned source. */
export function usageWriterMetrics(registry: Registry): UsageWriterSource {
  let source = sourceByRegistry.get(registry);
  if (source) return source;
  const src: UsageWriterSource = { writer: null };
  sourceByRegistry.set(registry, (source = src));
  const registers = [registry];
  let counted = { writer: null as UsageWriter | null, stored: 0, skipped: 0 };
  // Counters from the writer's own tallies: a new writer starts from 0 and is added on.
  const delta = (field: 'stored' | 'skipped'): number => {
    const w = src.writer;
    if (w === null) return 0;
    if (counted.writer !== w) counted = { writer: w, stored: 0, skipped: 0 };
    const d = w[field] - counted[field];
    counted[field] = w[field];
    return d;
  };
  new Counter({
    name: 'llmgw_usage_records_stored_total',
    help: 'Usage records moved from the journal into the tenancy store',
    registers,
    collect(this: Counter) {
      this.inc(delta('stored'));
    },
  });
  new Counter({
    name: 'llmgw_usage_journal_lines_skipped_total',
    help: 'Usage journal lines the store could not read (malformed, or torn at the end of a finished segment); each is logged with its segment and offset',
    registers,
    collect(this: Counter) {
      this.inc(delta('skipped'));
    },
  });
  new Gauge({
    name: 'llmgw_usage_journal_backlog_bytes',
    help: 'Usage journal bytes not yet in the tenancy store; it should stay near 0',
    registers,
    collect(this: Gauge) {
      if (src.writer) this.set(src.writer.backlogBytes());
    },
  });
  return source;
}
