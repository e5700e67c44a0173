/**
 * What each poller job did lately, for `GET /admin/pollers/<id>` and the console: its last deliveries (seen
 * by the dispatcher) and its last warnings and errors (seen in the poller log records that name the job).
 * In memory, since the daemon started; the log keeps everything.
 */
import type { LogFields, Logger } from '@agent/log';

interface Delivery {
  item: string;
  channel: string;
  to: string;
  at: string;
  ok: boolean;
}

interface JobError {
  at: string;
  message: string;
  reason: string | null;
}

export interface JobJournal {
  delivered(jobId: string, d: Omit<Delivery, 'at'>): void;
  deliveries(jobId: string): Delivery[];
  errors(jobId: string): JobError[];
  /** A logger that passes every record on and notes the warnings and errors that name a job. */
  tap(logger: Logger): Logger;
}

const KEEP = 20;

function push<T>(m: Map<string, T[]>, id: string, v: T): void {
  const list = m.get(id) ?? [];
  list.unshift(v);
  list.length = Math.min(list.length, KEEP);
  m.set(id, list);
}

export function createJobJournal(now: () => Date = () => new Date()): JobJournal {
  const deliveries = new Map<string, Delivery[]>();
  const errors = new Map<string, JobError[]>();
  const note = (msg: string, fields: LogFields) => {
    const id = fields.job_id;
    if (typeof id !== 'string') return;
    const reason = fields.reason ?? fields.err ?? fields.error;
    push(errors, id, {
      at: now().toISOString(),
      message: msg,
      reason: reason === undefined ? null : String(reason),
    });
  };
  const tap = (inner: Logger, context: LogFields): Logger => ({
    debug: (msg, f) => inner.debug(msg, f),
    info: (msg, f) => inner.info(msg, f),
    warn: (msg, f) => {
      inner.warn(msg, f);
      note(msg, { ...context, ...f });
    },
    error: (msg, f) => {
      inner.error(msg, f);
      note(msg, { ...context, ...f });
    },
    child: (fields) => tap(inner.child(fields), { ...context, ...fields }),
  });
  return {
    delivered: (jobId, d) => push(deliveries, jobId, { ...d, at: now().toISOString() }),
    deliveries: (jobId) => [...(deliveries.get(jobId) ?? [])],
    errors: (jobId) => [...(errors.get(jobId) ?? [])],
    tap: (logger) => tap(logger, {}),
  };
}
