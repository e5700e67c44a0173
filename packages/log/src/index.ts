/**
 * Structured logging shared by every package: one record per line, `key=value` by default
 * (`ts=… level=info msg="config reload applied" version=3`) or JSON for machines.
 */

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFormat = 'kv' | 'json';
export type LogFields = Record<string, unknown>;

export interface LogRecord {
  ts: string;
  level: LogLevel;
  msg: string;
  fields: LogFields;
}

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  /** A logger that adds `fields` to every record. */
  child(fields: LogFields): Logger;
}

export interface LoggerOptions {
  level?: LogLevel;
  format?: LogFormat;
  /** Where finished lines go; stderr by default. */
  write?: (line: string) => void;
  now?: () => Date;
}

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export function isLogLevel(value: unknown): value is LogLevel {
  return typeof value === 'string' && value in ORDER;
}

// A safety net: a field whose name looks like a credential is never printed, whatever its value.
const SECRET_KEY =
  /(^|_)(api_?key|token|secret|password|passwd|authorization|refresh_token|access_token|app_secret)$/i;
export const REDACTED = '[redacted]';

export function redactFields(fields: LogFields): LogFields {
  let out: LogFields | undefined;
  for (const [k, v] of Object.entries(fields)) {
    if (SECRET_KEY.test(k) && v !== undefined && v !== null && v !== '') {
      out ??= { ...fields };
      out[k] = REDACTED;
    }
  }
  return out ?? fields;
}

function kvValue(v: unknown): string {
  let s: string;
  if (v instanceof Error) s = v.message;
  else if (Array.isArray(v))
    s = v.map((x) => (typeof x === 'object' && x !== null ? JSON.stringify(x) : String(x))).join(',');
  else if (typeof v === 'object' && v !== null) s = JSON.stringify(v);
  else s = String(v);
  return s === '' || /[\s="\\]/.test(s) ? JSON.stringify(s) : s;
}

export function formatRecord(rec: LogRecord, format: LogFormat): string {
  const fields = redactFields(rec.fields);
  if (format === 'json') {
    const body: LogFields = { ts: rec.ts, level: rec.level, msg: rec.msg };
    for (const [k, v] of Object.entries(fields)) {
      if (v !== undefined) body[k] = v instanceof Error ? v.message : v;
    }
    return JSON.stringify(body);
  }
  let line = `ts=${rec.ts} level=${rec.level} msg=${JSON.stringify(rec.msg)}`;
  for (const [k, v] of Object.entries(fields)) {
    if (v !== undefined) line += ` ${k}=${kvValue(v)}`;
  }
  return line;
}

class StructuredLogger implements Logger {
  constructor(
    private readonly opts: Required<LoggerOptions>,
    private readonly bound: LogFields,
  ) {}
  // Logging never throws: a caller that logs from an error path (an uncaught-exception handler) must not get
  // a new exception back, or it logs again and loops.
  private emit(level: LogLevel, msg: string, fields?: LogFields): void {
    if (ORDER[level] < ORDER[this.opts.level]) return;
    try {
      const rec: LogRecord = {
        ts: this.opts.now().toISOString(),
        level,
        msg,
        fields: { ...this.bound, ...fields },
      };
      let line: string;
      try {
        line = formatRecord(rec, this.opts.format);
      } catch (err) {
        // A field JSON cannot print (a cycle, a BigInt): keep the record, drop the fields.
        line = formatRecord({ ...rec, fields: { log_error: (err as Error).message } }, this.opts.format);
      }
      this.opts.write(line);
    } catch {
      // The sink failed synchronously; there is nowhere left to report it.
    }
  }
  debug(msg: string, fields?: LogFields): void {
    this.emit('debug', msg, fields);
  }
  info(msg: string, fields?: LogFields): void {
    this.emit('info', msg, fields);
  }
  warn(msg: string, fields?: LogFields): void {
    this.emit('warn', msg, fields);
  }
  error(msg: string, fields?: LogFields): void {
    this.emit('error', msg, fields);
  }
  child(fields: LogFields): Logger {
    return new StructuredLogger(this.opts, { ...this.bound, ...fields });
  }
}

/**
 * A sink that writes one line per call to `stream` and stops, silently, once the stream failed or closed
 * (EPIPE: whoever read our stderr is gone). Without the 'error' listener a failed write would be an uncaught
 * exception, which the daemon logs, which fails again: a busy loop that never lets a signal be handled.
 */
export function streamSink(stream: NodeJS.WritableStream): (line: string) => void {
  let broken = false;
  stream.on('error', () => {
    broken = true;
  });
  const s = stream as NodeJS.WritableStream & { destroyed?: boolean };
  return (line) => {
    if (broken) return;
    if (s.destroyed === true || !stream.writable) {
      broken = true;
      return;
    }
    try {
      stream.write(line + '\n');
    } catch {
      broken = true;
    }
  };
}

// One sink for stderr per process, so one 'error' listener however many loggers there are.
let stderrSink: ((line: string) => void) | undefined;
const writeStderr = (line: string): void => {
  stderrSink ??= streamSink(process.stderr);
  stderrSink(line);
};

export function createLogger(options: LoggerOptions = {}): Logger {
  return new StructuredLogger(
    {
      level: options.level ?? 'info',
      format: options.format ?? 'kv',
      write: options.write ?? writeStderr,
      now: options.now ?? (() => new Date()),
    },
    {},
  );
}

/** A logger that drops everything. */
export const silentLogger: Logger = createLogger({ level: 'error', write: () => {} });

/** A logger that keeps records in memory, for tests. `lines` holds the formatted kv lines. */
export interface MemoryLogger extends Logger {
  readonly records: LogRecord[];
  readonly lines: string[];
  find(msg: string): LogRecord[];
}

export function createMemoryLogger(level: LogLevel = 'debug'): MemoryLogger {
  const records: LogRecord[] = [];
  const lines: string[] = [];
  const make = (bound: LogFields): MemoryLogger => {
    const emit = (lv: LogLevel, msg: string, fields?: LogFields): void => {
      if (ORDER[lv] < ORDER[level]) return;
      const rec: LogRecord = {
        ts: new Date(0).toISOString(),
        level: lv,
        msg,
        fields: { ...bound, ...fields },
      };
      records.push(rec);
      lines.push(formatRecord(rec, 'kv'));
    };
    return {
      records,
      lines,
      find: (msg) => records.filter((r) => r.msg === msg),
      debug: (m, f) => emit('debug', m, f),
      info: (m, f) => emit('info', m, f),
      warn: (m, f) => emit('warn', m, f),
      error: (m, f) => emit('error', m, f),
      child: (fields) => make({ ...bound, ...fields }),
    };
  };
  return make({});
}
