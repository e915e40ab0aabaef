// Watches what a running llmgw believes each engine's batch capacity is (`batchCapacity`
// in GET /admin/v1/endpoints), so a benchmark can say whether it was learnt and how soon.

import { request } from 'undici';

export interface CapacitySeen {
  /** Endpoint id → the capacity llmgw holds at the end (null: never learnt). */
  final: Map<string, number | null>;
  /** Endpoint id → when (performance.now()) it first held a capacity. */
  firstAt: Map<string, number>;
  /** Endpoint id → where the capacity came from at the end: engine (published), config, learnt or null. */
  from: Map<string, string | null>;
  /** Endpoint id → the prefill rate llmgw measured at the end, prompt tokens per ms (null: none yet). */
  prefill: Map<string, number | null>;
  /** Requests recalled from the model's engines to make way for its first band, over every band (`/admin/v1/admission`); null: not read. */
  recalled: number | null;
}

/** Polls every `everyMs` until stopped, for the endpoints serving `model`; a failed poll is skipped, the next one tries again. */
export class CapacityWatch {
  private readonly seen: CapacitySeen = { final: new Map(), firstAt: new Map(), from: new Map(), prefill: new Map(), recalled: null };
  private stopped = false;
  private readonly loop: Promise<void>;

  constructor(
    private readonly adminUrl: string,
    private readonly model: string,
    private readonly everyMs = 200,
  ) {
    this.loop = this.run();
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      await this.poll().catch(() => undefined);
      await new Promise((r) => setTimeout(r, this.everyMs));
    }
  }

  private async poll(): Promise<void> {
    const res = await request(`${this.adminUrl}/admin/v1/endpoints`);
    const list = (await res.body.json()) as { id: string; models: string[]; batchCapacity: number | null; batchCapacityFrom: string | null; prefillTokensPerMs: number | null }[];
    const now = performance.now();
    for (const e of list) {
      if (!e.models.includes(this.model)) continue;
      this.seen.final.set(e.id, e.batchCapacity);
      this.seen.from.set(e.id, e.batchCapacityFrom);
      this.seen.prefill.set(e.id, e.prefillTokensPerMs);
      if (e.batchCapacity !== null && !this.seen.firstAt.has(e.id)) this.seen.firstAt.set(e.id, now);
    }
  }

  /** Stops polling after one last look, and reads how many requests were recalled. */
  async stop(): Promise<CapacitySeen> {
    this.stopped = true;
    await this.loop;
    await this.poll().catch(() => undefined);
    this.seen.recalled = await this.recalled().catch(() => null);
    return this.seen;
  }

  private async recalled(): Promise<number> {
    const res = await request(`${this.adminUrl}/admin/v1/admission`);
    const body = (await res.body.json()) as { models?: { model: string; bands: { recalled: number }[] }[] };
    const bands = (body.models ?? []).find((m) => m.model === this.model)?.bands ?? [];
    return bands.reduce((sum, b) => sum + b.recalled, 0);
  }
}
