/**
 * A clock whose timers share one timer of the clock beneath, armed for the earliest. A scheduled tick arms
 * two waits that nearly always end cancelled (its fetch deadline, its lease renewal): with one Node timer
 * each, every tick made and dropped two timer objects with their wrappers. Here a wait is a set entry.
 *
 * Made for the few waits in flight at once (about two per running tick, bounded by `max_concurrent_ticks`,
 * and some retries): a wake-up scans them all. Many long-lived waits, such as every job's next run, belong
 * in a queue ordered by time (the scheduler's `TimerQueue`), which then arms one wait here.
 */
import { monotonicNow, type Clock, type TimerCallback } from './clock.js';

/** One pending wait; `at` on the monotonic clock. */
class Wait {
  constructor(
    readonly at: number,
    readonly callback: TimerCallback,
  ) {}
}

export function coalescedClock(clock: Clock): Clock {
  const waits = new Set<Wait>();
  let armedAt = Number.POSITIVE_INFINITY;
  let handle: unknown = null;
  const mono = () => monotonicNow(clock);

  const arm = (at: number) => {
    if (handle !== null) clock.clearTimer(handle);
    armedAt = at;
    handle = clock.setTimer(fire, Math.max(0, at - mono()));
  };

  // Runs the due waits in time order (equal times in the order they were set); arms for the next one.
  function fire(): Promise<unknown> {
    handle = null;
    armedAt = Number.POSITIVE_INFINITY;
    const now = mono();
    const due: Wait[] = [];
    for (const w of waits) if (w.at <= now) due.push(w);
    due.sort((a, b) => a.at - b.at);
    const settled: Promise<unknown>[] = [];
    for (const w of due) {
      // Cancelled by an earlier callback of this round: it does not run.
      if (!waits.delete(w)) continue;
      try {
        const r = w.callback();
        if (r instanceof Promise) settled.push(r.catch(() => {}));
      } catch {
        // A timer callback's failure is its own (as with the clock beneath): the others still run.
      }
    }
    let next = Number.POSITIVE_INFINITY;
    for (const w of waits) if (w.at < next) next = w.at;
    if (next < armedAt) arm(next);
    return Promise.all(settled);
  }

  return {
    now: () => clock.now(),
    monotonicNow: mono,
    setTimer(callback, ms) {
      // NaN and negative delays mean "as soon as possible", as with `setTimeout`.
      const w = new Wait(mono() + (ms > 0 ? ms : 0), callback);
      waits.add(w);
      if (w.at < armedAt) arm(w.at);
      return w;
    },
    clearTimer(h) {
      // The timer beneath stays armed: when it fires it finds nothing due and arms for the next wait.
      waits.delete(h as Wait);
      if (waits.size === 0 && handle !== null) {
        clock.clearTimer(handle);
        handle = null;
        armedAt = Number.POSITIVE_INFINITY;
      }
    },
  };
}
