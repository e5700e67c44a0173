/**
 * The claim loop's sleep: a timer that `wake()` cuts short and `lookBy(at)` brings forward (a tick ended
 * and named its next run). A wake during a round makes the next sleep return at once.
 */
import type { Clock } from './clock.js';

export interface LoopSleep {
  /** Sleeps `ms` at most (host clock), less when woken or asked to look earlier. */
  sleep(ms: number): Promise<void>;
  wake(): void;
  /** The loop must look again by host time `at`. */
  lookBy(at: number): void;
  /** A round starts: its claim sees every job released so far, so earlier wakes and looks are spent. */
  beginRound(): void;
}

export function createLoopSleep(clock: Clock): LoopSleep {
  let woken = false;
  let lookBy: number | null = null;
  let wakeUp: (() => void) | null = null;
  let rearm: ((at: number) => void) | null = null;
  return {
    sleep: (ms) =>
      new Promise<void>((resolve) => {
        let deadline = Math.min(clock.now() + ms, lookBy ?? Infinity);
        if (woken || deadline <= clock.now()) return resolve();
        let timer = clock.setTimer(() => wakeUp?.(), deadline - clock.now());
        wakeUp = () => {
          wakeUp = rearm = null;
          clock.clearTimer(timer);
          resolve();
        };
        rearm = (at) => {
          if (at >= deadline) return;
          deadline = at;
          clock.clearTimer(timer);
          timer = clock.setTimer(() => wakeUp?.(), Math.max(0, at - clock.now()));
        };
      }),
    wake() {
      woken = true;
      wakeUp?.();
    },
    lookBy(at) {
      lookBy = Math.min(lookBy ?? Infinity, at);
      rearm?.(at);
    },
    beginRound() {
      woken = false;
      lookBy = null;
    },
  };
}
