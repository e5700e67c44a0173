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

/**
 * Replaces every secret value in `text` (e.g. `ConfigSnapshot.redact`). Returns `text` itself when there is
 * nothing to replace, so that a line without secrets costs no new string.
 */
export type Redactor = (text: string) => string;

export interface LoggerOptions {
  level?: LogLevel;
  format?: LogFormat;
  /** Where finished lines go; stderr by default. */
  write?: (line: string) => void;
  now?: () => Date;
  /** Applied to the message and every field value of every record, at every level. */
  redact?: Redactor | null;
}

/** The logger `createLogger` returns: its children share the redactor it is given later. */
export interface RootLogger extends Logger {
  /** Replaces the redactor of this logger and of every child (`null`: nothing to hide). */
  setRedactor(redact: Redactor | null): void;
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

const MAX_DEPTH = 8;

/**
 * `v` with every string in it (object keys too) passed through `redact`; `v` itself when nothing changed, so
 * that a record without secrets allocates nothing here. Deeper than `MAX_DEPTH`, the value is printed to JSON
 * text and that is redacted (a cycle then throws, as `JSON.stringify` would).
 */
function redactValue(v: unknown, redact: Redactor, depth = 0): unknown {
  if (typeof v === 'string') return redact(v);
  if (v instanceof Error) return redact(v.message);
  // Typed arrays and buffers hold numbers only.
  if (typeof v !== 'object' || v === null || ArrayBuffer.isView(v)) return v;
  if (depth >= MAX_DEPTH) return redact(JSON.stringify(v));
  if (Array.isArray(v)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < v.length; i++) {
      const x: unknown = v[i];
      const r = redactValue(x, redact, depth + 1);
      if (r !== x) (out ??= v.slice())[i] = r;
    }
    return out ?? v;
  }
  let out: Record<string, unknown> | undefined;
  const obj = v as Record<string, unknown>;
  for (const k in obj) {
    const x = obj[k];
    const r = redactValue(x, redact, depth + 1);
    const rk = redact(k);
    if (r === x && rk === k) continue;
    out ??= { ...obj };
    if (rk !== k) delete out[k];
    out[rk] = r;
  }
  return out ?? v;
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

/**
 * One record as a line; `redact` hides secret values in the message and in every field value (strings inside
 * objects and arrays too), before anything is quoted or escaped.
 */
export function formatRecord(rec: LogRecord, format: LogFormat, redact: Redactor | null = null): string {
  const fields = redactFields(rec.fields);
  const msg = redact === null ? rec.msg : redact(rec.msg);
  if (format === 'json') {
    const body: LogFields = { ts: rec.ts, level: rec.level, msg };
    for (const [k, v] of Object.entries(fields)) {
      if (v === undefined) continue;
      const shown = v instanceof Error ? v.message : v;
      body[k] = redact === null ? shown : redactValue(shown, redact);
    }
    return JSON.stringify(body);
  }
  let line = `ts=${rec.ts} level=${rec.level} msg=${JSON.stringify(msg)}`;
  for (const [k, v] of Object.entries(fields)) {
    if (v !== undefined) line += ` ${k}=${kvValue(redact === null ? v : redactValue(v, redact))}`;
  }
  return line;
}

interface Settings {
  level: LogLevel;
  format: LogFormat;
  write: (line: string) => void;
  now: () => Date;
  // Shared by a root logger and its children, so that `setRedactor` reaches every one of them.
  redact: Redactor | null;
}

class StructuredLogger implements RootLogger {
  constructor(
    private readonly opts: Settings,
    private readonly bound: LogFields,
  ) {}
  setRedactor(redact: Redactor | null): void {
    this.opts.redact = redact;
  }
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
      const { format, redact } = this.opts;
      let line: string;
      try {
        line = formatRecord(rec, format, redact);
      } catch (err) {
        // A field JSON cannot print (a cycle, a BigInt): keep the record, drop the fields.
        line = formatRecord({ ...rec, fields: { log_error: (err as Error).message } }, format, redact);
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

export function createLogger(options: LoggerOptions = {}): RootLogger {
  return new StructuredLogger(
    {
      level: options.level ?? 'info',
      format: options.format ?? 'kv',
      write: options.write ?? writeStderr,
      now: options.now ?? (() => new Date()),
      redact: options.redact ?? null,
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
