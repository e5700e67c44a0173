/** The runner's public shape: its options, its operator API and what that API answers. */
import type { RuntimeConfigView } from './agent-directory.js';
import type { GuardedHttp } from '@agent/guarded-http';
import type { Logger } from '@agent/log';
import type { AgentTool } from '@agent/poller-core';
import type { Registry } from 'prom-client';
import type { BreakerName } from './breaker.js';
import type { Clock } from './clock.js';
import type { ReloadPlan } from './plan.js';
import type { KindRegistry } from './registry.js';
import type { ClaimingStore } from './claiming-store.js';
import type { StateStore, TickStatus } from './store.js';
import type { Dispatcher, TickResultStatus } from './tick-types.js';
import type { RejectedJob } from './validate.js';

export interface RunnerOptions {
  snapshot: RuntimeConfigView;
  registry: KindRegistry;
  store: StateStore;
  dispatcher: Dispatcher;
  /** prom-client registry the poller series are registered on. */
  metrics: Registry;
  logger: Logger;
  /** Unique per process (e.g. `<hostname>:<pid>:<random>`); the lease holder name. */
  holderId: string;
  clock?: Clock;
  /** Uniform in [0, 1); jitter. */
  random?: () => number;
  /** HTTP client kinds get (wrapped per job); default a guarded client. */
  http?: GuardedHttp;
  /**
   * Whether a lease holder is certainly dead (a process of this host that is gone). At start its leases are
   * broken at once instead of after their TTL, which can be days. Default: never judged dead.
   */
  holderGone?: (holder: string) => boolean;
  /** TEST ONLY: lowers the 30 s lease TTL minimum. */
  minLeaseTtlMs?: number;
  /**
   * Length of a scheduling round in ms, 0 or a divisor of 1000 (default 250): a run due within a round starts
   * by its end (never before its own time), with the others of that round. 0 starts every run at its own time
   * (tests that step a fake clock to exact times). Single-host mode only: the cluster's claim loop ignores it.
   */
  roundMs?: number;
  /** Fraction of the lease TTL a kind's fetch may take (default 0.8), when below `tick_timeout_secs`. */
  tickDeadlineFactor?: number;
  /**
   * Cluster mode: a claim loop on the shared job table instead of a timer per job. `store` must then be
   * this same claiming store, and `holderId` unique per daemon incarnation (`<daemon_id>#<incarnation>`).
   */
  cluster?: ClusterRunnerOptions;
}

export interface ClusterRunnerOptions {
  store: ClaimingStore;
  /** The configuration version this daemon runs (the bundle version); read at every claim and reload. */
  configVersion(): number;
  /** False while this daemon could not heartbeat within its trust window: it claims and sends nothing. */
  trusted(): boolean;
  /** Ticks running at once on this daemon at most (default 64). */
  maxConcurrentTicks?: number;
  /** Longest sleep between claims (default 1000 ms). */
  pollMaxMs?: number;
  /** How often the leader reads the per-job gauges from the table (default 10 000 ms). */
  gaugeIntervalMs?: number;
  /**
   * Called when this daemon made jobs due earlier than the other daemons may know (resume, reset, the end of
   * a manual run, a reconcile that added or replaced jobs, leases handed back at stop): tell them, so that
   * their claim loops look by then instead of after their own sleep. Best effort: it must not throw, and a
   * hint that never arrives costs the others at most `pollMaxMs` of latency.
   */
  announceDue?(hint: DueHint): void;
}

/** Jobs made due on one daemon, as the other daemons' claim loops need to know it. */
export interface DueHint {
  jobIds: readonly string[];
  /** The earliest of their due times (database clock, ms since the epoch); `null`: now. */
  dueAt: number | null;
}

export interface JobSummary {
  id: string;
  kind: string;
  agent: string;
  schedule: string;
  paused: boolean;
  breaker: BreakerName;
  breaker_state: 0 | 1 | 2;
  consecutive_errors: number;
  last_status: TickStatus | null;
  last_error: string | null;
  last_run_at: string | null;
  next_run_at: string | null;
  /** `stale`: the job's entry in pollers.yaml is rejected and its previous definition keeps running. */
  definition: 'current' | 'stale';
  /** Why the current entry is rejected (located), while `definition` is `stale`. */
  definition_error: string | null;
  /** Cluster mode: the daemon holding the job's lease now (`<daemon_id>#<incarnation>`), or `null`. */
  holder?: string | null;
  /** Cluster mode: when that lease expires (database clock). */
  lease_expires_at?: string | null;
}

export interface JobDetail extends JobSummary {
  /** Config with secret values redacted. */
  config: Record<string, unknown>;
  deliver: { channel: string; to: string };
  failure_to: { channel: string; to: string } | null;
  cursor: { present: boolean; bytes: number };
  seen_ids: number;
  baselined: boolean;
  last_failure_alert_at: string | null;
  lease: { holder: string | null; epoch: number; expires_at: string } | null;
}

export interface RunResult {
  status: TickResultStatus;
  items_seen: number;
  items_dispatched: number;
  error?: string;
}

/** The operator's commands on one job (CLI, admin API, agent tools). */
export interface OperatorApi {
  list(): Promise<JobSummary[]>;
  show(id: string): Promise<JobDetail>;
  /**
   * Manual tick: bypasses the schedule, never overlaps another tick of the job in this process. Single host:
   * bypasses the lease too; cluster mode: takes it (busy while another daemon ticks the job).
   */
  run(id: string): Promise<RunResult>;
  pause(id: string): Promise<JobSummary>;
  resume(id: string): Promise<JobSummary>;
  /** Clears cursor, seen set, errors and breaker; leaves `paused` as it is. */
  reset(id: string): Promise<JobSummary>;
}

export interface Runner extends OperatorApi {
  start(): Promise<void>;
  /** Aborts in-flight ticks, waits for them, closes shared resources. */
  stop(): Promise<void>;
  /** Validates every job of `next` first, then applies remove, replace, add. */
  reload(next: RuntimeConfigView): Promise<ReloadPlan>;
  /**
   * The plan `reload(next)` would apply now, planned the same way; touches nothing and logs nothing.
   * `kinds` validates `next` instead of the runner's registry: the kinds a host would register by the reload.
   */
  previewReload(next: RuntimeConfigView, kinds?: KindRegistry): ReloadPlan;
  /** Drops every shared (agent, kind) resource; the next use rebuilds it from `snapshot`. */
  reloadCredentials(snapshot: RuntimeConfigView): Promise<void>;
  /** The six `pollers_*` tools plus every kind's tools. */
  tools(): AgentTool[];
  /** Jobs rejected by the last start or reload. */
  rejected(): readonly RejectedJob[];
  /** The same, with located reasons (secrets redacted); `running` when a previous definition runs. */
  rejectedJobs(): { id: string; errors: string[]; running: boolean }[];
  /** Resolves when no tick is running. */
  idle(): Promise<void>;
  /**
   * Cluster mode: claim now (jobs became due), or by `dueAt` (database clock) when given: a hint from
   * another daemon. No-op on a single host.
   */
  wake(dueAt?: number): void;
  /**
   * Cluster mode: whether this daemon exports the per-job state gauges (`poller_consecutive_errors`,
   * `poller_breaker_state`), read from the shared table; only the elected leader should. No-op on a single
   * host, where the runner always exports them.
   */
  exportJobGauges(on: boolean): void;
}
