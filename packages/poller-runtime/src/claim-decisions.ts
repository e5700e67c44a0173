/** The claim loop's decisions, as pure functions: how many jobs to claim, and how long to sleep. */

/** Jobs claimed per statement at most: batching by 10 is where claims get cheap (measured). */
const CLAIM_BATCH_MAX = 10;

/** `min(10, free capacity)`, never negative. */
export function claimLimit(maxConcurrentTicks: number, inFlight: number): number {
  return Math.max(0, Math.min(CLAIM_BATCH_MAX, maxConcurrentTicks - inFlight));
}

export interface SleepInput {
  /** Jobs the last claim returned, and how many it asked for (0: at capacity, none asked). */
  claimed: number;
  limit: number;
  /** Next due time of a job not claimed (database clock); `null`: none known. */
  nextDueAt: number | null;
  dbNow: number;
  pollMaxMs: number;
  /** Uniform in [0, 1): the ±10 % phase that keeps daemons from polling in step. */
  random: number;
}

/**
 * A full batch means more may be due: claim again at once. Otherwise sleep until the next due time, at most
 * `pollMaxMs` (jobs of other daemons' reconciles, resumes without a hint), with ±10 % random phase.
 */
export function claimSleepMs(i: SleepInput): number {
  if (i.limit > 0 && i.claimed >= i.limit) return 0;
  const untilDue = i.nextDueAt === null ? i.pollMaxMs : Math.max(0, i.nextDueAt - i.dbNow);
  const base = Math.min(untilDue, i.pollMaxMs);
  return Math.round(base * (0.9 + 0.2 * i.random));
}

/** Database minus host clock, taking the host time halfway through the round trip. */
export function skewOf(dbNow: number, hostSent: number, hostReceived: number): number {
  return dbNow - (hostSent + hostReceived) / 2;
}
