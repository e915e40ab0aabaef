// A systemd unit file read as systemd reads it: [Section] headers, Key=Value lines,
// `#`/`;` comments, a trailing backslash continuing a line, keys that may repeat. A line
// that is none of these is an error, so a stray edit fails the spec instead of being
// skipped.

export type UnitFile = ReadonlyMap<string, ReadonlyMap<string, readonly string[]>>;

export function parseUnitFile(text: string, source: string): UnitFile {
  const sections = new Map<string, Map<string, string[]>>();
  let current: Map<string, string[]> | undefined;
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    let line = lines[i]!.trim();
    const at = `${source}:${i + 1}`;
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    while (line.endsWith('\\') && i + 1 < lines.length) line = `${line.slice(0, -1)} ${lines[++i]!.trim()}`;
    const header = /^\[([A-Za-z]+)\]$/.exec(line);
    if (header) {
      if (sections.has(header[1]!)) throw new Error(`${at}: section [${header[1]}] appears twice`);
      sections.set(header[1]!, (current = new Map()));
      continue;
    }
    const kv = /^([A-Za-z][A-Za-z0-9]*)=(.*)$/.exec(line);
    if (!kv) throw new Error(`${at}: neither a section, a Key=Value line nor a comment: ${line}`);
    if (!current) throw new Error(`${at}: ${kv[1]} before any [Section]`);
    const values = current.get(kv[1]!) ?? [];
    values.push(kv[2]!.trim());
    current.set(kv[1]!, values);
  }
  return sections;
}

/** The last value of a key, as systemd applies it; undefined when unset. */
export function unitValue(unit: UnitFile, section: string, key: string): string | undefined {
  return unit.get(section)?.get(key)?.at(-1);
}

const SPAN_UNITS: Record<string, number> = { ms: 1, s: 1000, sec: 1000, m: 60_000, min: 60_000, h: 3_600_000 };

/** A systemd time span (`30s`, `1min 30s`, a bare number of seconds) in ms. */
export function timeSpanMs(span: string): number {
  if (/^\d+$/.test(span)) return Number(span) * 1000;
  let total = 0;
  const rest = span.replace(/(\d+)\s*([a-z]+)\s*/g, (_all, n: string, unit: string) => {
    const factor = SPAN_UNITS[unit];
    if (factor === undefined) throw new Error(`unknown time unit '${unit}' in '${span}'`);
    total += Number(n) * factor;
    return '';
  });
  if (rest !== '' || total === 0) throw new Error(`not a systemd time span: '${span}'`);
  return total;
}
