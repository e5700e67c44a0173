/** A periodic task that never overlaps itself: a round still running when the next is due delays it. */
import { setTimer, type TimerHandle } from '@agent/timers';

export interface Repeater {
  /** Runs one round now unless one is running; resolves when that round (or the running one) ends. */
  runNow(): Promise<void>;
  /** Stops the timer and waits for a running round. */
  stop(): Promise<void>;
}

/** `round` must not throw (a rejection is dropped); the first round runs after `everyMs`. */
export function repeat(everyMs: number, round: () => Promise<void>): Repeater {
  let timer: TimerHandle | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;
  const schedule = (): void => {
    if (!stopped) timer = setTimer(() => void runNow(), everyMs, { unref: true });
  };
  const runNow = (): Promise<void> => {
    if (running) return running;
    timer?.cancel();
    running = round()
      .catch(() => undefined)
      .finally(() => {
        running = undefined;
        schedule();
      });
    return running;
  };
  schedule();
  return {
    runNow,
    async stop() {
      stopped = true;
      timer?.cancel();
      await running;
    },
  };
}
