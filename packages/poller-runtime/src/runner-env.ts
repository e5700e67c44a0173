/** The runner's shared parts a tick uses, built once from the options and the current configuration. */
import type { RuntimeConfigView } from './agent-directory.js';
import type { PollersSettings } from './pollers-schema.js';
import { createGuardedHttp, type GuardedHttp } from '@agent/guarded-http';
import { monotonicNow, systemClock } from './clock.js';
import { coalescedClock } from './coalesced-clock.js';
import { createPollerMetrics } from './metrics.js';
import type { RunnerOptions } from './runner-api.js';
import { createSharedResources, type SharedResources } from './shared.js';
import { watchStore } from './store-health.js';
import type { RunnerSettings, TickEnv } from './tick-types.js';

const DEFAULT_SETTINGS: RunnerSettings = {
  default_jitter_ms: 5000,
  lease_ttl_factor: 2,
  tick_timeout_secs: 120,
  failure_alert_cooldown_secs: 3600,
  breaker_threshold: 5,
  max_concurrent_ticks: 64,
};

/** The configuration the runner works from; a reload replaces its fields. */
export interface CurrentConfig {
  snapshot: RuntimeConfigView;
  settings: PollersSettings | null;
}

export interface RunnerEnv {
  env: TickEnv;
  shared: SharedResources;
  /** Closes the HTTP client the runner made itself (none when one was given). */
  closeHttp(): Promise<void>;
}

export function createRunnerEnv(options: RunnerOptions, config: CurrentConfig): RunnerEnv {
  // The runner's waits share one timer (see coalescedClock).
  const clock = coalescedClock(options.clock ?? systemClock);
  const logger = options.logger.child({ component: 'pollers' });
  const metrics = createPollerMetrics(options.metrics);
  // Store failures become Transient errors of the jobs, and the store's health is logged once per outage.
  const { store, health } = watchStore(options.store, {
    metrics,
    logger,
    monotonicNow: () => monotonicNow(clock),
  });
  let ownHttp: GuardedHttp | null = null;
  const http = options.http ?? (ownHttp = createGuardedHttp({ logger }));
  const shared = createSharedResources({
    snapshot: () => config.snapshot,
    registry: options.registry,
    http,
    logger,
  });
  // Read several times per tick: merged once per settings change.
  let merged: { from: PollersSettings | null; value: RunnerSettings } | null = null;
  const env: TickEnv = {
    store,
    dispatcher: options.dispatcher,
    metrics,
    logger,
    clock,
    random: options.random ?? Math.random,
    settings() {
      if (merged?.from !== config.settings)
        merged = {
          from: config.settings,
          value: { ...DEFAULT_SETTINGS, ...config.settings } as RunnerSettings,
        };
      return merged.value;
    },
    http,
    shared: (def) => shared.get(def.agent, def.kind),
    redact: (t) => config.snapshot.redact(t),
    minLeaseTtlMs: options.minLeaseTtlMs ?? 30_000,
    tickDeadlineFactor: options.tickDeadlineFactor ?? 0.8,
    unrecorded: new Map(),
    storeHealth: health,
  };
  return { env, shared, closeHttp: async () => void (await ownHttp?.close().catch(() => {})) };
}
