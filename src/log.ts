// Logs are one JSON object per line on stderr: greppable at 3 a.m., parseable by any
// collector. The level is read once from LLMGW_LOG_LEVEL (or set by the config).

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

let threshold = RANK[(process.env.LLMGW_LOG_LEVEL as LogLevel | undefined) ?? 'info'] ?? RANK.info;

export function setLogLevel(level: LogLevel): void {
  threshold = RANK[level];
}

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  enabled(level: LogLevel): boolean;
}

export function createLogger(component: string): Logger {
  const write = (level: Exclude<LogLevel, 'silent'>, msg: string, fields?: Record<string, unknown>): void => {
    if (RANK[level] < threshold) return;
    process.stderr.write(formatLogLine(level, component, msg, fields) + '\n');
  };
  return {
    debug: (m, f) => write('debug', m, f),
    info: (m, f) => write('info', m, f),
    warn: (m, f) => write('warn', m, f),
    error: (m, f) => write('error', m, f),
    enabled: (level) => RANK[level] >= threshold,
  };
}

/** One log line, without its newline: for writers that batch lines (the access log). */
export function formatLogLine(level: Exclude<LogLevel, 'silent'>, component: string, msg: string, fields?: Record<string, unknown>, at = Date.now()): string {
  return JSON.stringify({ t: new Date(at).toISOString(), level, component, msg, ...fields }, errorReplacer);
}

function errorReplacer(_key: string, value: unknown): unknown {
  if (value instanceof Error) {
    const code = (value as { code?: unknown }).code;
    return code === undefined ? { message: value.message } : { code, message: value.message };
  }
  return value;
}
