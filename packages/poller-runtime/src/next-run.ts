/**
 * Every "when does this job run next" decision, as pure functions of the schedule, the stored state and the
 * time. The scheduler only arms what these return; nothing else computes a run time.
 */
import { jitterBound, transientBackoffMs, withJitter, type Schedule } from './schedule.js';
import type { JobState, JobStatePatch } from './store.js';

/** What a jittered run time draws from: the global bound and a uniform source in [0, 1). */
export interface Jitter {
  defaultJitterMs: number;
  random(): number;
}

/** The schedule fields a decision writes. */
export type SchedulePatch = Pick<JobStatePatch, 'nominalAt' | 'nextRunAt' | 'scheduleKey'>;

/** Retry delay after a scheduler error (or a store that cannot be read to re-arm). */
const SCHEDULER_RETRY_MS = 5000;

const jittered = (schedule: Schedule, slot: number, jitter: Jitter): number =>
  withJitter(slot, jitterBound(schedule, jitter.defaultJitterMs), jitter.random);

/** An `at` job whose instant has already fired never runs again. */
const atFired = (schedule: Schedule, firedKey: string | null): boolean =>
  schedule.type === 'at' && firedKey === schedule.key;

/** The first run from `now`: the first slot plus jitter (none for an `at` that already fired). */
export function firstRun(
  schedule: Schedule,
  firedKey: string | null,
  now: number,
  jitter: Jitter,
): SchedulePatch {
  const first = atFired(schedule, firedKey) ? null : schedule.firstSlot(now);
  return {
    scheduleKey: schedule.key,
    nominalAt: first,
    nextRunAt: first === null ? null : jittered(schedule, first, jitter),
  };
}

/**
 * At start: the stored run time is kept while the schedule is unchanged and set; otherwise the job starts
 * over from its first slot. `null`: nothing to change.
 */
export function runAtStart(
  schedule: Schedule,
  state: Pick<JobState, 'scheduleKey' | 'nextRunAt'>,
  firedKey: string | null,
  now: number,
  jitter: Jitter,
): SchedulePatch | null {
  const keep =
    state.scheduleKey === schedule.key && (state.nextRunAt !== null || atFired(schedule, firedKey));
  return keep ? null : firstRun(schedule, firedKey, now, jitter);
}

/** At resume: one run soon (no backlog); an open breaker's probe is not pushed later by it. */
export function runAtResume(
  schedule: Schedule,
  state: Pick<JobState, 'atFired' | 'breakerState' | 'breakerRetryAt'>,
  now: number,
  jitter: Jitter,
): SchedulePatch {
  if (atFired(schedule, state.atFired)) return { nextRunAt: null };
  const patch = firstRun(schedule, null, now, jitter);
  const next = patch.nextRunAt ?? null;
  if (state.breakerState === 2 && state.breakerRetryAt !== null && next !== null)
    patch.nextRunAt = Math.min(next, state.breakerRetryAt);
  return patch;
}

/** After a successful scheduled tick: the next slot on the grid (missed ones skipped); an `at` job is done. */
export function runAfterSuccess(
  schedule: Schedule,
  nominalAt: number | null,
  now: number,
  jitter: Jitter,
): JobStatePatch {
  if (schedule.type === 'at')
    return {
      paused: true,
      atFired: schedule.key,
      nextRunAt: null,
      nominalAt: schedule.atMs ?? null,
      scheduleKey: schedule.key,
    };
  const slot = schedule.slotAfter(nominalAt ?? now, now);
  return {
    nominalAt: slot,
    nextRunAt: slot === null ? null : jittered(schedule, slot, jitter),
    scheduleKey: schedule.key,
  };
}

/** After a Permanent error (the job is paused): an `at` job counts as fired. */
export function runAfterPermanent(schedule: Schedule): JobStatePatch {
  return schedule.type === 'at' ? { atFired: schedule.key, nextRunAt: null } : {};
}

/**
 * After the n-th consecutive Transient error with the breaker still closed: `now + min(interval, 5 s x
 * 2^(n-1))`, or the server's wait hint when longer, plus jitter.
 */
export function runAfterTransient(
  schedule: Schedule,
  n: number,
  waitHintMs: number,
  now: number,
  jitter: Jitter,
): SchedulePatch {
  const backoff = transientBackoffMs(n, schedule.intervalMs(now));
  return {
    nextRunAt: jittered(schedule, now + Math.max(backoff, waitHintMs), jitter),
    scheduleKey: schedule.key,
  };
}

/** While the breaker is open: the next slot (to count it skipped) or the probe time, whichever comes first. */
export function runWhileOpen(
  schedule: Schedule,
  nominalAt: number | null,
  retryAt: number,
  now: number,
  jitter: Jitter,
): SchedulePatch & { nextRunAt: number } {
  const slot = schedule.type === 'at' ? null : schedule.slotAfter(nominalAt ?? now, now);
  const next = slot === null ? retryAt : Math.min(jittered(schedule, slot, jitter), retryAt);
  return { nominalAt: slot ?? nominalAt, nextRunAt: next, scheduleKey: schedule.key };
}

/** When the stored state is due for a scheduled tick at `now`. */
export function isDue(state: Pick<JobState, 'paused' | 'nextRunAt'>, now: number): boolean {
  return !state.paused && state.nextRunAt !== null && state.nextRunAt <= now;
}

/** When to arm the job's timer for its stored state; `null`: no timer (paused, or nothing left to run). */
export function armTime(state: Pick<JobState, 'paused' | 'nextRunAt'> | null): number | null {
  return !state || state.paused ? null : state.nextRunAt;
}

/** Another process holds the lease: look again when it would expire (never sooner than 100 ms). */
export function runWhenLeaseFrees(leaseExpiresAt: number | null, now: number): number {
  return Math.max(now + 100, (leaseExpiresAt ?? now) + 50);
}

/** After a scheduler error: try again shortly rather than leave the job without a timer. */
export function runAfterSchedulerError(now: number): number {
  return now + SCHEDULER_RETRY_MS;
}

/** When the job next does real work, for operators: while its breaker is open, the slots before the probe are only skipped. */
export function nextRealRun(state: JobState): number | null {
  if (state.paused) return null;
  if (state.breakerState === 2 && state.breakerRetryAt !== null && state.nextRunAt !== null)
    return Math.max(state.nextRunAt, state.breakerRetryAt);
  return state.nextRunAt;
}
