/**
 * The circuit breaker of a job as pure transitions: closed (0) -> open (2) after `breaker_threshold`
 * consecutive Transient errors, open -> half-open (1) when its probe is due, half-open -> closed on success
 * or open again (a longer wait) on failure. Every breaker change of the runner goes through here.
 */
import { breakerBackoffMs } from './schedule.js';
import {
  BREAKER_CLOSED,
  BREAKER_HALF_OPEN,
  BREAKER_OPEN,
  type JobState,
  type JobStatePatch,
} from './store.js';

export type BreakerName = 'closed' | 'half-open' | 'open';

const NAMES: readonly BreakerName[] = ['closed', 'half-open', 'open'];

/** The breaker fields a transition writes. */
export type BreakerPatch = Pick<
  JobStatePatch,
  'consecutiveErrors' | 'breakerState' | 'breakerOpenings' | 'breakerOpenedAt' | 'breakerRetryAt'
>;

type BreakerFields = Pick<JobState, 'consecutiveErrors' | 'breakerState' | 'breakerOpenings'>;

export function breakerName(state: number): BreakerName {
  return NAMES[state] ?? 'closed';
}

/** A success, or an operator's reset: closed, no errors, no openings. */
export function breakerClosed(): Required<BreakerPatch> {
  return {
    consecutiveErrors: 0,
    breakerState: BREAKER_CLOSED,
    breakerOpenings: 0,
    breakerOpenedAt: null,
    breakerRetryAt: null,
  };
}

export interface TransientTransition {
  patch: BreakerPatch;
  /** The breaker opened (again) with this failure: the caller alerts and waits until `retryAt`. */
  opened: boolean;
  /** Consecutive errors including this one. */
  errors: number;
  /** When the probe may run; set only when `opened`. */
  retryAt: number | null;
}

/**
 * After a Transient error: one more consecutive error; the breaker opens at the threshold, and a failed
 * probe (or any failure while not closed) opens it again for longer. The server's wait hint lengthens the
 * open time, never shortens it.
 */
export function breakerAfterTransient(
  state: BreakerFields,
  threshold: number,
  waitHintMs: number,
  now: number,
): TransientTransition {
  const errors = state.consecutiveErrors + 1;
  if (state.breakerState === BREAKER_CLOSED && errors < threshold)
    return { patch: { consecutiveErrors: errors }, opened: false, errors, retryAt: null };
  const openings = state.breakerState !== BREAKER_CLOSED ? state.breakerOpenings + 1 : 1;
  const retryAt = now + Math.max(breakerBackoffMs(openings), waitHintMs);
  return {
    patch: {
      consecutiveErrors: errors,
      breakerState: BREAKER_OPEN,
      breakerOpenings: openings,
      breakerOpenedAt: now,
      breakerRetryAt: retryAt,
    },
    opened: true,
    errors,
    retryAt,
  };
}

/** While open and before its probe time the job's slots are skipped: the probe time, else `null`. */
export function breakerSkipsUntil(
  state: Pick<JobState, 'breakerState' | 'breakerRetryAt'>,
  now: number,
): number | null {
  return state.breakerState === BREAKER_OPEN && state.breakerRetryAt !== null && now < state.breakerRetryAt
    ? state.breakerRetryAt
    : null;
}

/** A tick that runs while the breaker is open is its probe: half-open while it runs. `null`: no change. */
export function breakerProbe(state: Pick<JobState, 'breakerState'>): BreakerPatch | null {
  return state.breakerState === BREAKER_OPEN ? { breakerState: BREAKER_HALF_OPEN } : null;
}
