/** Time as the runner sees it: injectable, so tests drive schedules deterministically. */

export type TimerCallback = () => void | Promise<unknown>;

export interface Clock {
  now(): number;
  /** Calls `cb` after `ms`; a returned promise may be awaited by fake clocks. */
  setTimer(cb: TimerCallback, ms: number): unknown;
  clearTimer(handle: unknown): void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer(cb, ms) {
    const t = setTimeout(() => {
      void Promise.resolve()
        .then(cb)
        .catch(() => {});
    }, ms);
    t.unref?.();
    return t;
  },
  clearTimer: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
};

/** Resolves true after `ms`, or false as soon as `signal` aborts. */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<boolean> {
  if (signal?.aborted) return Promise.resolve(false);
  if (ms <= 0) return Promise.resolve(true);
  return new Promise((resolve) => {
    const onAbort = () => {
      clock.clearTimer(handle);
      resolve(false);
    };
    const handle = clock.setTimer(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
