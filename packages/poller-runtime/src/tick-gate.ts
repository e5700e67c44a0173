/**
 * At most N scheduled ticks at once in this process; the others wait their turn in order. Jobs created
 * together (10,000 feeds at a first start) otherwise start 10,000 fetches in one burst: memory peaks, and
 * the admin and metrics listeners wait behind them. A tick waiting here is late, never skipped.
 */
export interface TickGate {
  /** Resolves with the function that gives the slot back (call it exactly once). */
  enter(): Promise<() => void>;
  /** Ticks running now. */
  running(): number;
  /** Ticks waiting for a slot. */
  waiting(): number;
}

/**
 * `limit` is read at each decision, so a reloaded setting applies to the next tick. `onWaiting` hears the
 * number of waiting ticks whenever it changes (a gauge).
 */
export function createTickGate(limit: () => number, onWaiting: (n: number) => void = () => {}): TickGate {
  let running = 0;
  const queue: (() => void)[] = [];
  const leave = () => {
    running--;
    admit();
  };
  let reported = 0;
  const admit = () => {
    while (queue.length > 0 && running < Math.max(1, limit())) {
      running++;
      queue.shift()!();
    }
    // Told only on a change: a tick that finds a free slot costs the gauge nothing.
    if (queue.length !== reported) onWaiting((reported = queue.length));
  };
  return {
    enter() {
      return new Promise<() => void>((resolve) => {
        let left = false;
        queue.push(() =>
          resolve(() => {
            if (left) return;
            left = true;
            leave();
          }),
        );
        admit();
      });
    },
    running: () => running,
    waiting: () => queue.length,
  };
}
