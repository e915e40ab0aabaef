import type { ModelConfig } from '../config/index.js';

/** A model as clients see it: its canonical name and every name that resolves to it. */
export interface CatalogEntry {
  name: string;
  aliases: readonly string[];
  fallbacks: readonly string[];
  /** Answers asked for whole are streamed from the engine and collected (`models[].stream_from_engine`). */
  streamFromEngine: boolean;
}

/**
 * Resolves what a client asked for (a name or an alias) to the canonical model. Built
 * once from the validated config, so resolution on the request path is one map lookup.
 */
export class Catalog {
  private readonly byName = new Map<string, CatalogEntry>();
  readonly entries: readonly CatalogEntry[];

  constructor(models: readonly ModelConfig[]) {
    this.entries = models.map((m) => ({ name: m.name, aliases: m.aliases, fallbacks: m.fallbacks, streamFromEngine: m.stream_from_engine }));
    for (const e of this.entries) {
      this.byName.set(e.name, e);
      for (const a of e.aliases) this.byName.set(a, e);
    }
  }

  resolve(asked: string): CatalogEntry | undefined {
    return this.byName.get(asked);
  }

  /** Every name a client may use, canonical names first. */
  names(): string[] {
    return [...this.entries.map((e) => e.name), ...this.entries.flatMap((e) => e.aliases)];
  }
}
