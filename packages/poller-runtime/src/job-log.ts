/** Per-job metric labels and loggers, made once per job definition or on first use. */
import type { Logger } from '@agent/log';
import type { JobLabels, PollerMetrics } from './metrics.js';
import type { JobDefinition } from './validate.js';

const jobLabels = new WeakMap<JobDefinition, JobLabels>();

/** The job's metric labels, made once per job definition (not at every tick). */
export function labelsOf(def: JobDefinition): JobLabels {
  let l = jobLabels.get(def);
  if (!l) {
    l = { kind: def.kind.kind, agent: def.agent, job_id: def.id };
    jobLabels.set(def, l);
  }
  return l;
}

/** A child logger made on first use: most ticks log nothing. */
function lazyChild(base: Logger, fields: Record<string, unknown>): Logger {
  let real: Logger | undefined;
  const get = () => (real ??= base.child(fields));
  return {
    debug: (msg, f) => get().debug(msg, f),
    info: (msg, f) => get().info(msg, f),
    warn: (msg, f) => get().warn(msg, f),
    error: (msg, f) => get().error(msg, f),
    child: (f) => get().child(f),
  };
}

/** The job's own logger for one tick, made on first use. */
export function tickLogger(base: Logger, def: JobDefinition): Logger {
  return lazyChild(base, { job_id: def.id, kind: def.kind.kind, agent: def.agent });
}

// Warning messages each job definition's kind has logged: a replaced definition starts afresh.
const kindWarnings = new WeakMap<JobDefinition, Set<string>>();

/**
 * The logger a kind gets. A warning it gives again at every tick (an item it cannot use, say) is logged once
 * per job definition and then only counted in `poller_kind_warnings_total`; other levels pass through.
 */
export function kindLogger(metrics: PollerMetrics, def: JobDefinition, base: Logger): Logger {
  let warned = kindWarnings.get(def);
  if (!warned) kindWarnings.set(def, (warned = new Set()));
  const seen = warned;
  const wrap = (log: Logger): Logger => ({
    debug: (msg, f) => log.debug(msg, f),
    info: (msg, f) => log.info(msg, f),
    error: (msg, f) => log.error(msg, f),
    warn(msg, f) {
      metrics.kindWarning(labelsOf(def));
      if (seen.has(msg)) return;
      seen.add(msg);
      log.warn(msg, {
        ...f,
        repeats: 'logged once per job definition, counted in poller_kind_warnings_total',
      });
    },
    child: (fields) => wrap(log.child(fields)),
  });
  return wrap(base);
}
