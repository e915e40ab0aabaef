// The Prometheus text format as the server's /metrics writes it, read into what a query
// can use: each family's type, and each series name with the labels its samples carry.

export interface Exposition {
  /** Family name → counter, gauge, histogram, summary or untyped. */
  readonly families: ReadonlyMap<string, string>;
  /** Sample name (`x_bucket`, `x_sum`, … for histograms) → the label names seen on it. */
  readonly series: ReadonlyMap<string, ReadonlySet<string>>;
}

export function parseExposition(text: string): Exposition {
  const families = new Map<string, string>();
  const series = new Map<string, Set<string>>();
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) families.set(type[1]!, type[2]!);
    if (line === '' || line.startsWith('#')) continue;
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? \S+/.exec(line);
    if (!sample) throw new Error(`not a sample line: ${line}`);
    const labels = series.get(sample[1]!) ?? new Set<string>();
    for (const m of (sample[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*"/g)) labels.add(m[1]!);
    series.set(sample[1]!, labels);
  }
  return { families, series };
}

const SUFFIXES: Record<string, readonly string[]> = { histogram: ['_bucket', '_sum', '_count'], summary: ['', '_sum', '_count'] };

/**
 * Whether a query may read `name`: a counter or gauge by its own name, a histogram only
 * through its `_bucket`/`_sum`/`_count` series (a classic histogram has no bare series).
 */
export function isQueryable(exp: Exposition, name: string): boolean {
  const own = exp.families.get(name);
  if (own !== undefined && !(own in SUFFIXES)) return true;
  for (const [type, suffixes] of Object.entries(SUFFIXES)) {
    for (const s of suffixes) if (s !== '' && name.endsWith(s) && exp.families.get(name.slice(0, -s.length)) === type) return true;
    if (type === 'summary' && own === type) return true;
  }
  return false;
}
