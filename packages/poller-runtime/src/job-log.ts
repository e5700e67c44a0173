/** Per-job metric labels and loggers, made once per job definition or on first use. */
import type { LogFields, Logger } from '@agent/log';
import type { JobLabels, PollerMetrics } from './metrics.js';
import type { JobDefinition } from './validate.js';

const jobLabels = new WeakMap<JobDefinition, JobLabels>();

/**
 * The job's metric labels, made once per job definition (not at every tick). Frozen: the metric families
 * then build the series' label text once for it (see `@agent/metrics-text`).
 */
export function labelsOf(def: JobDefinition): JobLabels {
  let l = jobLabels.get(def);
  if (!l) {
    l = Object.freeze({ kind: def.kind.kind, agent: def.agent, job_id: def.id });
    jobLabels.set(def, l);
  }
  return l;
}

/**
 * The job's own logger for one tick: one small object per tick, the child logger made only when a record is
 * written (most ticks log nothing). Methods on a prototype, not closures: a tick allocates one object here.
 */
class TickLogger implements Logger {
  private real: Logger | undefined;
  constructor(
    private readonly base: Logger,
    private readonly def: JobDefinition,
  ) {}
  private get log(): Logger {
    const { def } = this;
    return (this.real ??= this.base.child({ job_id: def.id, kind: def.kind.kind, agent: def.agent }));
  }
  debug(msg: string, fields?: LogFields): void {
    this.log.debug(msg, fields);
  }
  info(msg: string, fields?: LogFields): void {
    this.log.info(msg, fields);
  }
  warn(msg: string, fields?: LogFields): void {
    this.log.warn(msg, fields);
  }
  error(msg: string, fields?: LogFields): void {
    this.log.error(msg, fields);
  }
  child(fields: LogFields): Logger {
    return this.log.child(fields);
  }
}

/** The job's own logger for one tick, made on first use. */
export function tickLogger(base: Logger, def: JobDefinition): Logger {
  return new TickLogger(base, def);
}

// Warning messages each job definition's kind has logged: a replaced definition starts afresh. A set is made at
// a definition's first warning: most jobs never warn, and an empty set per job was 0.16 KB of heap each.
const kindWarnings = new WeakMap<JobDefinition, Set<string>>();

/** Whether `msg` is a warning the definition's kind logged before; it is recorded as logged from now on. */
function warnedBefore(def: JobDefinition, msg: string): boolean {
  const warned = kindWarnings.get(def);
  if (warned?.has(msg)) return true;
  if (warned) warned.add(msg);
  else kindWarnings.set(def, new Set([msg]));
  return false;
}

/** The notice a repeated kind warning carries. */
const REPEATS = 'logged once per job definition, counted in poller_kind_warnings_total';

/** A kind's logger (see `kindLogger`): one object per tick, no closures. */
class KindLogger implements Logger {
  constructor(
    private readonly metrics: PollerMetrics,
    private readonly def: JobDefinition,
    private readonly log: Logger,
  ) {}
  debug(msg: string, fields?: LogFields): void {
    this.log.debug(msg, fields);
  }
  info(msg: string, fields?: LogFields): void {
    this.log.info(msg, fields);
  }
  error(msg: string, fields?: LogFields): void {
    this.log.error(msg, fields);
  }
  warn(msg: string, fields?: LogFields): void {
    this.metrics.kindWarning(labelsOf(this.def));
    if (warnedBefore(this.def, msg)) return;
    this.log.warn(msg, { ...fields, repeats: REPEATS });
  }
  child(fields: LogFields): Logger {
    return new KindLogger(this.metrics, this.def, this.log.child(fields));
  }
}

/**
 * The logger a kind gets. A warning it gives again at every tick (an item it cannot use, say) is logged once
 * per job definition and then only counted in `poller_kind_warnings_total`; other levels pass through.
 */
export function kindLogger(metrics: PollerMetrics, def: JobDefinition, base: Logger): Logger {
  return new KindLogger(metrics, def, base);
}
