import { Counter, Gauge, Registry } from 'prom-client';
import type { Admission } from './admission.js';

/** Queue depth per model and band, read when Prometheus scrapes. */
export function admissionMetrics(admissions: ReadonlyMap<string, Admission>): Registry {
  const registry = new Registry();
  new Gauge({
    name: 'llmgw_admission_queued',
    help: 'Requests waiting for admission',
    labelNames: ['model', 'band'],
    registers: [registry],
    collect(this: Gauge<'model' | 'band'>) {
      this.reset();
      for (const a of admissions.values()) for (const b of a.queue.stats()) this.set({ model: a.model, band: b.band }, b.queued);
    },
  });
  new Gauge({
    name: 'llmgw_admission_saturated',
    help: "1 while a model's engines count as saturated (requests queue)",
    labelNames: ['model'],
    registers: [registry],
    collect(this: Gauge<'model'>) {
      this.reset();
      const now = Date.now();
      for (const a of admissions.values()) this.set({ model: a.model }, a.saturated(now) === null ? 0 : 1);
    },
  });
  new Counter({
    name: 'llmgw_admission_recalled_total',
    help: 'Requests taken back from an engine before any of their answer reached the client, to make way for the first band, and queued again',
    labelNames: ['model', 'band'],
    registers: [registry],
    collect(this: Counter<'model' | 'band'>) {
      this.reset();
      for (const a of admissions.values()) for (const b of a.queue.stats()) if (b.recalled > 0) this.inc({ model: a.model, band: b.band }, b.recalled);
    },
  });
  return registry;
}
