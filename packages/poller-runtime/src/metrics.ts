/**
 * The spec's poller series, on an injected prom-client `Registry` (never the global one). Per-job series are
 * `@agent/metrics-text` families: at 10,000 jobs a scrape renders them in tens of milliseconds, where
 * prom-client's own rendering took several hundred.
 */
import { SeriesIndex, TextCounter, TextGauge, TextHistogram } from '@agent/metrics-text';
import { Counter, Gauge } from '@agent/metrics-text';
import type { Registry } from 'prom-client';
import type { TickStatus } from './store.js';

/**
 * Buckets of `poller_latency_ms` (the spec leaves them open): 8 bounds from 10 ms to 60 s, finest where a
 * feed fetch and its delivery usually land (50 ms ... 1 s). Each bucket is a line per job in every scrape.
 */
export const LATENCY_BUCKETS_MS = [10, 50, 100, 250, 1000, 2500, 10_000, 60_000];
const STATUSES: TickStatus[] = ['ok', 'transient', 'permanent', 'skipped'];

export interface JobLabels {
  kind: string;
  agent: string;
  job_id: string;
}

export interface PollerMetrics {
  tick(labels: JobLabels, status: TickStatus, latencyMs?: number): void;
  itemsSeen(labels: JobLabels, n: number): void;
  itemsDispatched(labels: JobLabels, n: number): void;
  consecutiveErrors(jobId: string, n: number): void;
  breakerState(jobId: string, state: 0 | 1 | 2): void;
  leaseTakeover(jobId: string): void;
  /** 1 while the job is paused (by an operator, a Permanent error or a fired `at`), else 0. */
  paused(jobId: string, paused: boolean): void;
  /** Time of the job's last successful tick (ms since the epoch; exported in seconds). */
  lastSuccess(jobId: string, atMs: number): void;
  /** A warning a kind logged (repeats are counted here, not logged again). */
  kindWarning(labels: JobLabels): void;
  /** Jobs of the running configuration that are rejected (a rejected edit of a running job included). */
  rejectedJobs(n: number): void;
  /** Deletes the job's state gauges (errors, breaker): cluster mode, where only the leader exports them. */
  clearJobGauges(jobId: string): void;
  /** Deletes every series of the job (removed or replaced jobs). */
  removeJob(labels: JobLabels): void;
  /** 0 while the state store fails (from a failed call until a write goes through again), else 1. */
  storeHealthy(healthy: boolean): void;
  /** Scheduled ticks due but waiting for a slot of `max_concurrent_ticks` (single-host mode). */
  ticksWaiting(n: number): void;
  /** A failed call to the state store (`operation`: the store method). */
  storeError(operation: string): void;
}

/** A metric of the registry, made once: several services (tests, restarts in-process) share a registry. */
function metric<T>(
  registry: Registry,
  name: string,
  make: (base: { name: string; registers: Registry[] }) => T,
): T {
  return (registry.getSingleMetric(name) as T | undefined) ?? make({ name, registers: [registry] });
}

const JOB = ['kind', 'agent', 'job_id'] as const;

type TickLabels = JobLabels & { status: TickStatus };

/**
 * The series indexes of a registry's per-job families, one per list of label names: the families of a job
 * share one map of label texts (at 10,000 jobs, five maps of 0.46 MB fewer).
 */
const seriesIndexes = new WeakMap<Registry, Map<string, SeriesIndex>>();

function seriesIndexOf<L extends string>(registry: Registry, labelNames: readonly L[]): SeriesIndex<L> {
  let byNames = seriesIndexes.get(registry);
  if (!byNames) seriesIndexes.set(registry, (byNames = new Map()));
  const key = labelNames.join(',');
  let index = byNames.get(key);
  if (!index) byNames.set(key, (index = new SeriesIndex(labelNames)));
  return index as SeriesIndex<L>;
}

/** The series of the spec and beyond it, made once per registry (see `metric`). */
function pollerSeries(registry: Registry) {
  // Per-job series: one per job (and status), so thousands of them.
  const counter = <L extends string>(name: string, help: string, labelNames: readonly L[]) =>
    metric(
      registry,
      name,
      (m) => new TextCounter<L>({ ...m, help, labelNames, series: seriesIndexOf(registry, labelNames) }),
    );
  const gauge = <L extends string>(name: string, help: string, labelNames: readonly L[]) =>
    metric(
      registry,
      name,
      (m) => new TextGauge<L>({ ...m, help, labelNames, series: seriesIndexOf(registry, labelNames) }),
    );
  // A few series each: prom-client's own.
  const plainGauge = (name: string, help: string) => metric(registry, name, (m) => new Gauge({ ...m, help }));
  const plainCounter = <L extends string>(name: string, help: string, labelNames: readonly L[]) =>
    metric(registry, name, (m) => new Counter<L>({ ...m, help, labelNames }));
  const JOB_ID = ['job_id'] as const;
  return {
    ticks: counter('poller_ticks_total', 'Poller ticks by outcome.', [...JOB, 'status']),
    latency: metric(
      registry,
      'poller_latency_ms',
      (m) =>
        new TextHistogram({
          ...m,
          help: 'Tick duration in milliseconds (fetch and delivery).',
          labelNames: JOB,
          series: seriesIndexOf(registry, JOB),
          buckets: LATENCY_BUCKETS_MS,
        }),
    ),
    seen: counter('poller_items_seen_total', 'New items found by ticks.', JOB),
    dispatched: counter('poller_items_dispatched_total', 'Items delivered to their channel.', JOB),
    errors: gauge('poller_consecutive_errors', 'Consecutive Transient errors of a job.', JOB_ID),
    breaker: gauge('poller_breaker_state', 'Breaker state: 0 closed, 1 half-open, 2 open.', JOB_ID),
    takeovers: counter(
      'poller_lease_takeovers_total',
      'Leases of another holder taken over: expired, held by a dead process of this host, or (cluster mode) broken because its daemon stopped heartbeating.',
      JOB_ID,
    ),
    paused: gauge(
      'poller_paused',
      'Paused jobs: 1 while paused (by an operator, a Permanent error or a fired at), else 0.',
      JOB_ID,
    ),
    success: gauge(
      'poller_last_success_timestamp_seconds',
      'Unix time of the last successful tick of a job (absent until the first one).',
      JOB_ID,
    ),
    kindWarnings: counter(
      'poller_kind_warnings_total',
      'Warnings kinds gave during ticks; each message is logged once per job definition, then only counted here.',
      JOB,
    ),
    rejected: plainGauge(
      'poller_jobs_rejected',
      'Jobs of pollers.yaml rejected by the last start or reload (a running job keeps its previous definition).',
    ),
    storeHealthy: plainGauge(
      'poller_store_healthy',
      'State store health: 0 from a failed call (disk full, I/O error, busy, read-only) until a write goes through again, else 1.',
    ),
    ticksWaiting: plainGauge(
      'poller_ticks_waiting',
      'Scheduled ticks that are due but wait for a slot (max_concurrent_ticks): they run late, never skipped.',
    ),
    storeErrors: plainCounter(
      'poller_store_errors_total',
      'Failed state store calls, by store method; the ticks they stopped count as transient.',
      ['operation'],
    ),
  };
}

export function createPollerMetrics(registry: Registry): PollerMetrics {
  const series = pollerSeries(registry);
  const { ticks, latency, seen, dispatched, errors, breaker, takeovers, success, kindWarnings } = series;
  const { paused: pausedGauge, rejected, storeHealthy, storeErrors, ticksWaiting } = series;
  // Last value set per job: most ticks leave the gauges as they were, and a set costs a label hash.
  // The job's `{ job_id }` labels are kept frozen with them, so a family finds the series' text without
  // building it (a tick sets `lastSuccess`).
  const published = new Map<
    string,
    { labels: Readonly<{ job_id: string }>; errors?: number; breaker?: number; paused?: boolean }
  >();
  const last = (jobId: string) => {
    let p = published.get(jobId);
    if (!p) published.set(jobId, (p = { labels: Object.freeze({ job_id: jobId }) }));
    return p;
  };
  // A job's tick labels with each status, made once per frozen job labels (`labelsOf`), frozen as above.
  const withStatus = new WeakMap<JobLabels, Partial<Record<TickStatus, Readonly<TickLabels>>>>();
  const tickLabels = (labels: JobLabels, status: TickStatus): Readonly<TickLabels> => {
    // Only a frozen object can be a key: a caller's mutable one may name another job next time.
    if (!Object.isFrozen(labels)) return { ...labels, status };
    let byStatus = withStatus.get(labels);
    if (!byStatus) withStatus.set(labels, (byStatus = {}));
    return (byStatus[status] ??= Object.freeze({
      kind: labels.kind,
      agent: labels.agent,
      job_id: labels.job_id,
      status,
    }));
  };
  return {
    tick(labels, status, latencyMs) {
      ticks.inc(tickLabels(labels, status));
      if (latencyMs !== undefined) latency.observe(labels, latencyMs);
    },
    itemsSeen: (labels, n) => seen.inc(labels, n),
    itemsDispatched: (labels, n) => dispatched.inc(labels, n),
    consecutiveErrors(jobId, n) {
      const p = last(jobId);
      if (p.errors === n) return;
      errors.set(p.labels, n);
      p.errors = n;
    },
    breakerState(jobId, s) {
      const p = last(jobId);
      if (p.breaker === s) return;
      breaker.set(p.labels, s);
      p.breaker = s;
    },
    leaseTakeover: (jobId) => takeovers.inc({ job_id: jobId }),
    paused(jobId, on) {
      const p = last(jobId);
      if (p.paused === on) return;
      pausedGauge.set(p.labels, on ? 1 : 0);
      p.paused = on;
    },
    lastSuccess: (jobId, atMs) => success.set(last(jobId).labels, atMs / 1000),
    kindWarning: (labels) =>
      kindWarnings.inc({ kind: labels.kind, agent: labels.agent, job_id: labels.job_id }),
    rejectedJobs: (n) => rejected.set(n),
    clearJobGauges(jobId) {
      errors.remove({ job_id: jobId });
      breaker.remove({ job_id: jobId });
      const p = published.get(jobId);
      if (p) {
        delete p.errors;
        delete p.breaker;
      }
    },
    removeJob(labels) {
      for (const status of STATUSES) ticks.remove({ ...labels, status });
      latency.remove(labels);
      seen.remove(labels);
      dispatched.remove(labels);
      errors.remove({ job_id: labels.job_id });
      published.delete(labels.job_id);
      breaker.remove({ job_id: labels.job_id });
      takeovers.remove({ job_id: labels.job_id });
      pausedGauge.remove({ job_id: labels.job_id });
      success.remove({ job_id: labels.job_id });
      kindWarnings.remove(labels);
    },
    storeHealthy: (healthy) => storeHealthy.set(healthy ? 1 : 0),
    ticksWaiting: (n) => ticksWaiting.set(n),
    storeError: (operation) => storeErrors.inc({ operation }),
  };
}
