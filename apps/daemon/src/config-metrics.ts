/** Metrics of the configuration: the spec's series plus the reload series of decisions §2. */
import { Counter, Gauge, Histogram } from '@agent/metrics-text';
import type { Registry } from 'prom-client';
import type { ConfigSnapshot } from '@agent/config-snapshot';

export interface ConfigMetrics {
  /** Sets `runtime_config_version{agent_id}` for every agent of the snapshot (and drops removed ones). */
  setVersions(snapshot: ConfigSnapshot): void;
  reloadApplied(): void;
  reloadRejected(): void;
  observeLatency(ms: number): void;
  setLastSuccessful(ok: boolean): void;
  /** What `config_last_reload_successful` says now. */
  lastSuccessful(): boolean;
}

export function createConfigMetrics(registry: Registry): ConfigMetrics {
  const applied = new Counter({
    name: 'config_reload_applied_total',
    help: 'Reloads that applied a new configuration version.',
    registers: [registry],
  });
  const rejected = new Counter({
    name: 'config_reload_rejected_total',
    help: 'Reloads in which at least one agent, or the whole reload, was rejected.',
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'config_reload_latency_ms',
    help: 'Time from reload trigger to the new snapshot being current (or rejected), in milliseconds.',
    buckets: [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000],
    registers: [registry],
  });
  const last = new Gauge({
    name: 'config_last_reload_successful',
    help: '1 if the last reload applied with nothing rejected, else 0.',
    registers: [registry],
  });
  const version = new Gauge({
    name: 'runtime_config_version',
    help: 'Configuration snapshot version each agent runs on.',
    labelNames: ['agent_id'],
    registers: [registry],
  });
  let known = new Set<string>();
  let lastOk = true;
  return {
    setVersions(snapshot) {
      const now = new Set(snapshot.agents.keys());
      for (const id of known) if (!now.has(id)) version.remove({ agent_id: id });
      for (const [id, a] of snapshot.agents) version.set({ agent_id: id }, a.version);
      known = now;
    },
    reloadApplied: () => applied.inc(),
    reloadRejected: () => rejected.inc(),
    observeLatency: (ms) => latency.observe(ms),
    setLastSuccessful: (ok) => {
      lastOk = ok;
      last.set(ok ? 1 : 0);
    },
    lastSuccessful: () => lastOk,
  };
}
