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
