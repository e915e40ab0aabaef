/**
 * The name a request is counted under in metrics and totals: the canonical model of a
 * catalog name or alias, `unknown` for anything else. Clients choose the names they
 * send; without this bound each made-up name would be a new Prometheus series and a
 * new entry in the totals, for as long as the process runs.
 */
export class ModelLabels {
  static readonly UNKNOWN = 'unknown';

  /** @param names every catalog name and alias → its canonical model */
  constructor(private readonly names: Readonly<Record<string, string>>) {}

  of(name: string): string {
    return Object.hasOwn(this.names, name) ? this.names[name]! : ModelLabels.UNKNOWN;
  }
}

/** Every name a client may send (canonical and alias) → the canonical model it is counted under. */
export function catalogLabels(models: readonly { readonly name: string; readonly aliases: readonly string[] }[]): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const m of models) {
    labels[m.name] = m.name;
    for (const a of m.aliases) labels[a] = m.name;
  }
  return labels;
}
