/**
 * @agent/poller-runtime — the host side of the poller subsystem: registry, validation, reload plan,
 * scheduler, runner service, metrics and the state store interface. The SQLite store is `./sqlite`, the
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
export {
  POLLERS_FILE,
  POLLERS_FILE_CODES,
  POLLERS_SECTION,
  pollersOf,
  pollersSectionReader,
  type EnvelopeRejectedJob,
  type LoadedJob,
  type PollersSection,
  type PollersSectionOptions,
} from './pollers-section.js';
export {
  legacyJobsYaml,
  warnLegacyJobs,
  type LegacyContext,
  type LegacyJobSource,
  type LegacyReport,
  type LegacyTranslation,
  type TranslatedLegacyJob,
} from './legacy-jobs.js';
export {
  JOB_ID_MAX_LENGTH,
  jobSchema,
  pollersFileSchema,
  type PollerJob,
  type PollersSettings,
} from './pollers-schema.js';
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
  executeTick,
  SEEN_MIN,
  type DeliveryRequest,
  type Dispatcher,
  type RunnerEnv,
  type RunnerSettings,
  type TickOptions,
  type TickOutcome,
  type TickReport,
} from './runner.js';
export {
  createPollerService,
  type BreakerName,
  type JobDetail,
  type JobSummary,
  type PollerService,
  type PollerServiceOptions,
  type RunResult,
} from './service.js';
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
  type StateStore,
  type TickStatus,
} from './store.js';
export { hashSourceKey, sameSource, sourceKeyOf } from './source-key.js';
export { isLeaseLost, isStateStoreError, LeaseLostError, StateStoreError } from './errors.js';
