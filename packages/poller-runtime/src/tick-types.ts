/** What one tick needs from the runner, and what it hands back. */
import type { GuardedHttp } from '@agent/guarded-http';
import type { Logger } from '@agent/log';
import type { Clock } from './clock.js';
import type { PollerMetrics } from './metrics.js';
import type { CommitOps, Fence, JobState, StateStore, TickStatus } from './store.js';
import type { Unrecorded } from './unrecorded.js';
import type { JobDefinition } from './validate.js';

/** Sends one rendered message. The daemon resolves the agent's binding for the channel. */
export interface Dispatcher {
  deliver(message: DeliveryRequest): Promise<void>;
}

export interface DeliveryRequest {
  agentId: string;
  channel: string;
  to: string;
  text: string;
  jobId: string;
  /** Item id, or `alert:<ms>` for failure alerts. */
  itemId: string;
  signal?: AbortSignal;
}

export interface RunnerSettings {
  default_jitter_ms: number;
  lease_ttl_factor: number;
  /** Deadline of a tick's fetch, capped at `tickDeadlineFactor` x the lease TTL. */
  tick_timeout_secs: number;
  failure_alert_cooldown_secs: number;
  breaker_threshold: number;
  /** Scheduled ticks running at once in this process (single-host mode); the others wait their turn. */
  max_concurrent_ticks: number;
}

/** The runner's shared parts a tick uses. */
export interface TickEnv {
  store: StateStore;
  dispatcher: Dispatcher;
  metrics: PollerMetrics;
  logger: Logger;
  clock: Clock;
  random: () => number;
  settings(): RunnerSettings;
  http: GuardedHttp;
  /** The (agent, kind) shared resource of a job. */
  shared(def: JobDefinition): Promise<unknown>;
  /** Removes secret values from text. */
  redact(text: string): string;
  minLeaseTtlMs: number;
  /** Fraction of the lease TTL a kind's fetch may take (when below `tick_timeout_secs`). */
  tickDeadlineFactor: number;
  /** Outcomes of failed ticks the store could not record (it was failing), per job. */
  unrecorded?: Unrecorded;
  /** Told of every tick that ended Transient because of the state store. */
  storeHealth?: { tickFailed(): void };
}

/** Writes of one tick. Each checks first that the job was not replaced or removed. */
export interface TickWriter {
  /** The lease a scheduled tick writes under; `null` for a manual run. */
  readonly fence: Fence | null;
  write(ops: CommitOps): Promise<void>;
  /** The tick's last write: with a lease, it releases the lease in the same transaction. */
  writeLast(ops: CommitOps): Promise<void>;
  /**
   * Scheduled ticks: throws `LeaseLostError` when this holder may no longer act on its lease (its trust
   * window ran out, or the fence moved on). Awaited right before every send.
   */
  confirmLease?(): Promise<void>;
}

/** One tick of one job, as its caller set it up. */
export interface TickRun {
  def: JobDefinition;
  /** `scheduled` ticks move the schedule; `manual` (run) leaves it as it is. */
  mode: 'scheduled' | 'manual';
  /** The job's state when the tick began, with what the store could not record laid over it. */
  state: JobState;
  /** Aborted by pause, reset, replace/remove, shutdown or lease loss. */
  signal: AbortSignal;
  /** Aborts `signal`; the deadline then uses it instead of a controller of its own. */
  abort?(reason: unknown): void;
  writer: TickWriter;
  log: Logger;
  startedAt: number;
}

export type TickResultStatus = TickStatus | 'aborted' | 'lease_lost';

export interface TickReport {
  status: TickResultStatus;
  items_seen: number;
  items_dispatched: number;
  /** Short reason of a failure. */
  error?: string;
  /** Scheduled ticks: the job's schedule after the tick's last write, so the caller need not read it. */
  next?: { paused: boolean; nextRunAt: number | null };
}
