// What a PromQL expression asks of the metrics it reads: the metric names, the label of
// every matcher, and the labels it groups or joins by. Enough of PromQL's lexical
// grammar to find them without a full parser: strings are skipped whole (so a label
// value is never taken for a name), numbers and durations are not identifiers, an
// identifier followed by `(` is a function, and the keywords that take a label list
// (`by`, `without`, `on`, `ignoring`, `group_left`, `group_right`) consume it.

export interface PromqlRefs {
  /** Metric names, as written (`llmgw_request_ttft_seconds_bucket`). */
  readonly metrics: ReadonlySet<string>;
  /** Every `label op "value"` inside `metric{…}`. */
  readonly matchers: readonly { readonly metric: string; readonly label: string }[];
  /** Labels named in by/without/on/ignoring/group_left/group_right lists. */
  readonly grouping: ReadonlySet<string>;
  /** Functions and aggregations called. */
  readonly functions: ReadonlySet<string>;
}

const LABEL_LIST_KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);
const OTHER_KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'atan2', 'inf', 'nan']);

/** The aggregations and functions of PromQL (Prometheus 2.x/3.x). */
export const PROMQL_FUNCTIONS: ReadonlySet<string> = new Set(
  (
    'sum min max avg group stddev stdvar count count_values bottomk topk quantile limitk limit_ratio ' +
    'abs absent absent_over_time ceil changes clamp clamp_max clamp_min day_of_month day_of_week day_of_year days_in_month ' +
    'delta deriv exp floor histogram_avg histogram_count histogram_fraction histogram_quantile histogram_stddev histogram_stdvar ' +
    'histogram_sum holt_winters double_exponential_smoothing hour idelta increase irate label_join label_replace ln log2 log10 ' +
    'minute month predict_linear rate resets round scalar sgn sort sort_desc sort_by_label sort_by_label_desc sqrt time timestamp vector year ' +
    'avg_over_time min_over_time max_over_time sum_over_time count_over_time quantile_over_time stddev_over_time stdvar_over_time ' +
    'last_over_time present_over_time mad_over_time acos acosh asin asinh atan atanh cos cosh sin sinh tan tanh deg pi rad'
  ).split(' '),
);

type Token = { kind: 'ident' | 'string' | 'number' | 'punct'; text: string; at: number };

function tokenize(expr: string): Token[] {
  const out: Token[] = [];
  const re = /\s+|#[^\n]*|"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`|(?:\d+(?:ms|[smhdwy]))+|0x[0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[a-zA-Z_:][a-zA-Z0-9_:]*|=~|!~|!=|==|<=|>=|[-+*/%^<>=(){}\[\],@]/y;
  let at = 0;
  while (at < expr.length) {
    re.lastIndex = at;
    const m = re.exec(expr);
    if (!m) throw new Error(`cannot read PromQL at ${at}: ${expr.slice(at, at + 20)}… in ${expr}`);
    const t = m[0];
    if (!/^\s|^#/.test(t)) {
      const kind = /^["'`]/.test(t) ? 'string' : /^[\d.]/.test(t) ? 'number' : /^[a-zA-Z_:]/.test(t) ? 'ident' : 'punct';
      out.push({ kind, text: t, at });
    }
    at += t.length;
  }
  return out;
}

/** Grafana's variables, replaced by something PromQL reads the same way. */
export function expandGrafanaVariables(expr: string): string {
  return expr.replace(/\$__(?:rate_interval|interval|range)\b|\$\{__(?:rate_interval|interval|range)\}/g, '5m').replace(/\$\{\w+(?::\w+)?\}|\$\w+/g, 'var');
}

export function promqlRefs(expr: string): PromqlRefs {
  const tokens = tokenize(expr);
  const metrics = new Set<string>();
  const matchers: { metric: string; label: string }[] = [];
  const grouping = new Set<string>();
  const functions = new Set<string>();
  let bracket = 0; // inside [range] or [range:step]: `m`, `h`… there are durations, not names
  const fail = (t: Token | undefined, what: string): never => {
    throw new Error(`expected ${what} at ${t?.at ?? expr.length} in ${expr}`);
  };

  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (t.text === '[') bracket++;
    if (t.text === ']') bracket--;
    if (bracket > 0) continue;
    const next = tokens[i + 1];
    if (t.kind === 'ident' && LABEL_LIST_KEYWORDS.has(t.text)) {
      if (next?.text !== '(') {
        if (t.text === 'group_left' || t.text === 'group_right') continue; // without a list
        fail(next, `( after ${t.text}`);
      }
      i += 2;
      while (tokens[i]?.text !== ')') {
        const label = tokens[i];
        if (label?.kind !== 'ident') fail(label, 'a label name');
        grouping.add(label!.text);
        i++;
        if (tokens[i]?.text === ',') i++;
      }
      continue;
    }
    // `sum by (le) (…)`: the aggregation comes before its label list, not before `(`.
    if (t.kind === 'ident' && (next?.text === '(' || (PROMQL_FUNCTIONS.has(t.text) && (next?.text === 'by' || next?.text === 'without')))) {
      functions.add(t.text);
      continue;
    }
    if (t.kind === 'ident' && OTHER_KEYWORDS.has(t.text.toLowerCase())) continue;
    if (t.kind === 'ident' || t.text === '{') {
      const metric = t.kind === 'ident' ? t.text : '';
      if (metric) metrics.add(metric);
      if ((t.kind === 'ident' ? next : t)?.text !== '{') continue;
      i += t.kind === 'ident' ? 2 : 1;
      while (tokens[i]?.text !== '}') {
        const label = tokens[i];
        const op = tokens[i + 1];
        const value = tokens[i + 2];
        if (label?.kind !== 'ident' || !['=', '!=', '=~', '!~'].includes(op?.text ?? '') || value?.kind !== 'string') fail(label, 'label op "value"');
        if (label!.text === '__name__') metrics.add(JSON.parse(value!.text.replace(/^'|'$/g, '"')) as string);
        else matchers.push({ metric, label: label!.text });
        i += 3;
        if (tokens[i]?.text === ',') i++;
      }
    }
  }
  return { metrics, matchers, grouping, functions };
}
