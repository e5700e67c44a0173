/**
 * The clock of cluster mode: the host clock corrected by the database's, so that run times computed here
 * land on the grid the database judges due-ness on. Timers and the monotonic clock are the host's.
 */
import type { Clock } from './clock.js';

export interface DbCorrectedClock {
  clock: Clock;
  /** Records a database time seen during a round trip (host times before and after it). */
  observe(skewMs: number): void;
  skewMs(): number;
}

export function createDbCorrectedClock(base: Clock): DbCorrectedClock {
  let skew = 0;
  const clock: Clock = {
    now: () => base.now() + skew,
    monotonicNow: () => (base.monotonicNow ? base.monotonicNow() : base.now()),
    setTimer: (cb, ms) => base.setTimer(cb, ms),
    clearTimer: (h) => base.clearTimer(h),
  };
  return {
    clock,
    observe(skewMs) {
      skew = skewMs;
    },
    skewMs: () => skew,
  };
}
