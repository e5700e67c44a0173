/**
 * @agent/poller-runtime — the host side of the poller subsystem: registry, validation, reload plan,
 * scheduler, runner, metrics and the state store interface. The SQLite store is `./sqlite`, the
 * runtime test kit `./testing`; kinds are written against `@agent/poller-core`.
 */
export { monotonicNow, systemClock, sleep, type Clock, type TimerCallback } from './clock.js';
export {
  createKindRegistry,
  kindsOfModule,
  loadKindPackages,
  type KindPackageFailure,
  type KindRegistry,
  type LoadKindPackagesResult,
} from './registry.js';
export {
  issueLines,
  validatePollers,
  type Destination,
  type JobDefinition,
  type RejectedJob,
  type ValidationResult,
} from './validate.js';
export { planReload, type ReloadPlan } from './plan.js';
export {
  agentDirectory,
  type AgentDirectory,
  type AgentDirectorySource,
  type RuntimeConfigView,
} from './agent-directory.js';
// The `./config` entry: reading pollers.yaml (the section reader, its result, the file's schemas).
export * from './config.js';
export {
  legacyJobsYaml,
  warnLegacyJobs,
  type LegacyContext,
  type LegacyReport,
  type LegacyTranslation,
  type TranslatedLegacyJob,
} from './legacy-jobs.js';
export { JOB_ID_MAX_LENGTH } from './pollers-schema.js';
export {
  breakerBackoffMs,
  isValidTimeZone,
  jitterBound,
  leaseTrustMarginMs,
  leaseTtlMs,
  parseRfc3339,
  parseSchedule,
  transientBackoffMs,
  withJitter,
  zoneOffsetMs,
  type ParseResult,
  type Schedule,
  type ScheduleSpec,
} from './schedule.js';
export { createPollerMetrics, LATENCY_BUCKETS_MS, type JobLabels, type PollerMetrics } from './metrics.js';
export {
  runAfterPermanent,
  runAfterSchedulerError,
  runAfterSuccess,
  runAfterTransient,
  runAtResume,
  runAtStart,
  runWhenLeaseFrees,
  runWhileOpen,
  firstRun,
  isDue,
  armTime,
  nextRealRun,
  type Jitter,
  type SchedulePatch,
} from './next-run.js';
export {
  breakerAfterTransient,
  breakerClosed,
  breakerName,
  breakerProbe,
  breakerSkipsUntil,
  type BreakerName,
  type BreakerPatch,
  type TransientTransition,
} from './breaker.js';
export { failure, type FailedOutcome, type TickCounts, type TickOutcome } from './outcome.js';
export { runTick, SEEN_MIN } from './tick.js';
export { settleTick } from './settle.js';
export type {
  DeliveryRequest,
  Dispatcher,
  RunnerSettings,
  TickEnv,
  TickReport,
  TickResultStatus,
  TickRun,
  TickWriter,
} from './tick-types.js';
export { createRunner } from './runner.js';
// When a scheduled run starts: `RunnerOptions.roundMs` defaults to this round.
export { DEFAULT_ROUND_MS, roundOf } from './scheduler.js';
export type {
  ClusterRunnerOptions,
  DueHint,
  JobDetail,
  JobSummary,
  OperatorApi,
  Runner,
  RunnerOptions,
  RunResult,
} from './runner-api.js';
export {
  BREAKER_CLOSED,
  BREAKER_HALF_OPEN,
  BREAKER_OPEN,
  DELIVERY_LOG_LIMIT,
  emptyJobState,
  type BreakerState,
  type CommitOps,
  type DeliveryRecord,
  type Fence,
  type JobState,
  type JobStatePatch,
  type LeaseGrant,
  type LeaseInfo,
  type StartWrite,
  type StateStore,
  type TickStatus,
} from './store.js';
export { hashSourceKey, sameSource, sourceKeyOf } from './source-key.js';
export { isLeaseLost, isStateStoreError, LeaseLostError, StateStoreError } from './errors.js';
