/**
 * Outcomes the state store could not record while it was failing: they count in memory, per job, until a
 * write of the job goes through, so that backoff, breaker and alert cooldown hold during an outage.
 */
import type { JobState, JobStatePatch } from './store.js';

/** Outcome fields of a failed tick that are kept in memory while the store cannot record them. */
const UNRECORDED_FIELDS = [
  'consecutiveErrors',
  'breakerState',
  'breakerOpenings',
  'breakerOpenedAt',
  'breakerRetryAt',
  'lastStatus',
  'lastError',
  'lastRunAt',
  'lastFailureAlertAt',
] as const satisfies readonly (keyof JobStatePatch)[];

/** Per job id, what the store could not record. */
export type Unrecorded = Map<string, JobStatePatch>;

/** The job's stored state with what the store could not record laid over it. */
export function withUnrecorded(unrecorded: Unrecorded | undefined, state: JobState): JobState {
  const kept = unrecorded?.get(state.jobId);
  if (!kept) return state;
  // Another holder recorded a later run: the stored state is newer than what this process kept.
  if ((state.lastRunAt ?? 0) > (kept.lastRunAt ?? 0)) {
    unrecorded!.delete(state.jobId);
    return state;
  }
  return { ...state, ...kept };
}

export function keepUnrecorded(
  unrecorded: Unrecorded | undefined,
  jobId: string,
  patch: JobStatePatch,
): void {
  if (!unrecorded) return;
  const kept: Record<string, unknown> = { ...unrecorded.get(jobId) };
  for (const field of UNRECORDED_FIELDS) if (patch[field] !== undefined) kept[field] = patch[field];
  unrecorded.set(jobId, kept as JobStatePatch);
}

/** An alert sent while the store failed: its cooldown is stored with the tick's outcome. */
export function carriedAlertStamp(unrecorded: Unrecorded | undefined, jobId: string): JobStatePatch {
  const keptAlertAt = unrecorded?.get(jobId)?.lastFailureAlertAt;
  return typeof keptAlertAt === 'number' ? { lastFailureAlertAt: keptAlertAt } : {};
}
