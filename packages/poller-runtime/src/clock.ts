/** Time as the runner sees it: injectable, so tests drive schedules deterministically. */
import { setTimer, sleep as sleepOn, type TimerHandle } from '@agent/timers';

export type TimerCallback = () => void | Promise<unknown>;

export interface Clock {
  /** Wall-clock ms since the epoch: schedules and stored times. */
  now(): number;
  /**
   * Ms from an arbitrary origin that wall-clock changes never move (`performance.now()`): the lease trust
   * window. Clocks without it fall back to `now()`.
   */
  monotonicNow?(): number;
  /** Calls `cb` after `ms`, however long (never early); a returned promise may be awaited by fake clocks. */
  setTimer(cb: TimerCallback, ms: number): unknown;
  clearTimer(handle: unknown): void;
}

/** One options object for every timer of the system clock, not one per timer. */
const UNREF = { unref: true } as const;

export const systemClock: Clock = {
  now: () => Date.now(),
  monotonicNow: () => performance.now(),
  // @agent/timers chains waits past 2^31-1 ms, which one Node timer would fire after 1 ms.
  setTimer: (cb, ms) =>
    setTimer(
      () => {
        void Promise.resolve()
          .then(cb)
          .catch(() => {});
      },
      ms,
      UNREF,
    ),
  clearTimer: (h) => (h as TimerHandle).cancel(),
};

/** Resolves true after `ms` on `clock`, or false as soon as `signal` aborts. */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<boolean> {
  return sleepOn(ms, signal, (cb, delay) => {
    const handle = clock.setTimer(cb, delay);
    return { cancel: () => clock.clearTimer(handle) };
  });
}

/** `clock.monotonicNow()`, or `clock.now()` for a clock without one. */
export function monotonicNow(clock: Clock): number {
  return clock.monotonicNow ? clock.monotonicNow() : clock.now();
}
