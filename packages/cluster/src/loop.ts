/**
 * A periodic task that never overlaps itself (a slow round skips the next start instead of piling up), and
 * a local deadline on the monotonic clock. Both wait through `@agent/timers`.
 */
import { setTimer, type TimerHandle } from '@agent/timers';

export interface Repeater {
  /** Runs one round now unless one is running; resolves when that round (or the running one) ends. */
  runNow(): Promise<void>;
  /** Stops the timer and waits for a running round. */
  stop(): Promise<void>;
}

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

/** Monotonic milliseconds: immune to wall-clock steps (NTP, an operator's `date`). */
export const monotonicMs = (): number => performance.now();

/**
 * "Good until": extended by each confirmation, it calls `onExpire` once when the last confirmation is older
 * than the window. `extend(t0)` takes the time the confirming round STARTED: the server saw it later.
 */
export interface Deadline {
  extend(startedAt: number): void;
  valid(): boolean;
  cancel(): void;
}

export function deadline(windowMs: number, onExpire: () => void, now = monotonicMs): Deadline {
  let until = -Infinity;
  let timer: TimerHandle | undefined;
  const arm = (): void => {
    timer?.cancel();
    timer = setTimer(() => (now() >= until ? onExpire() : arm()), until - now(), { unref: true });
  };
  return {
    extend(startedAt) {
      until = Math.max(until, startedAt + windowMs);
      arm();
    },
    valid: () => now() < until,
    cancel() {
      timer?.cancel();
      until = -Infinity;
    },
  };
}

/** Listeners of one event; `on` returns the function that removes the listener. */
export class Listeners<T> {
  private readonly set = new Set<(value: T) => void>();
  on(listener: (value: T) => void): () => void {
    this.set.add(listener);
    return () => this.set.delete(listener);
  }
  emit(value: T): void {
    for (const l of Array.from(this.set)) {
      try {
        l(value);
      } catch {
        // A listener's failure is its own; the others still hear the event.
      }
    }
  }
}
