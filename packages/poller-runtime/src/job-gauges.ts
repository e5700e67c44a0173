/**
 * Cluster mode's per-job state gauges: exported by one daemon (the leader), read from the shared table on
 * an interval, so that the series do not go stale on every daemon that once ticked a job.
 */
import type { Logger } from '@agent/log';
import { safeReason } from '@agent/poller-core';
import type { ClaimingStore } from './claiming-store.js';
import type { Clock } from './clock.js';
import type { PollerMetrics } from './metrics.js';

export interface JobGaugeExporter {
  set(on: boolean): void;
  stop(): void;
}

export function createJobGaugeExporter(deps: {
  store: ClaimingStore;
  metrics: PollerMetrics;
  clock: Clock;
  logger: Logger;
  intervalMs: number;
}): JobGaugeExporter {
  const { metrics, clock } = deps;
  let on = false;
  let timer: unknown = null;
  const exported = new Set<string>();

  const clear = () => {
    for (const id of exported) metrics.clearJobGauges(id);
    exported.clear();
  };
  const read = async () => {
    timer = null;
    if (!on) return;
    try {
      const rows = await deps.store.clusterJobs();
      if (!on) return;
      const now = new Set(rows.map((r) => r.state.jobId));
      for (const id of exported) if (!now.has(id)) metrics.clearJobGauges(id);
      exported.clear();
      for (const { state } of rows) {
        metrics.consecutiveErrors(state.jobId, state.consecutiveErrors);
        metrics.breakerState(state.jobId, state.breakerState);
        exported.add(state.jobId);
      }
    } catch (err) {
      deps.logger.warn('poller job gauges not read', { reason: safeReason(err) });
    }
    if (on) timer = clock.setTimer(read, deps.intervalMs);
  };
  const stop = () => {
    on = false;
    if (timer !== null) clock.clearTimer(timer);
    timer = null;
    clear();
  };
  return {
    set(next) {
      if (next === on) return;
      if (!next) return stop();
      on = true;
      void read();
    },
    stop,
  };
}
