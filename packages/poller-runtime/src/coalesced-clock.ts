/**
 * A clock whose timers share one timer of the clock beneath, armed for the earliest. A scheduled tick arms
 * two waits that nearly always end cancelled (its fetch deadline, its lease renewal): with one Node timer
 * each, every tick made and dropped two timer objects with their wrappers. Here a wait is an array entry.
 *
 * Made for the few waits in flight at once (about two per running tick, bounded by `max_concurrent_ticks`,
 * and some retries): a wake-up scans them all. Many long-lived waits, such as every job's next run, belong
 * in a queue ordered by time (the scheduler's `TimerQueue`), which then arms one wait here.
 */
import { monotonicNow, type Clock, type TimerCallback } from './clock.js';

/** One pending wait; `at` on the monotonic clock, `seq` the order it was set in. */
class Wait {
  /** Its place in the pending list; -1 once it ran or was cleared. */
  index = -1;
  constructor(
    readonly at: number,
    readonly seq: number,
    readonly callback: TimerCallback,
  ) {}
}

/**
 * The pending waits: the first `size` slots of an array, removed by swapping in the last. Not a Set: the
 * number of waits rises and falls with every round of ticks, and a Set is rehashed each time; a table it
 * left behind in the old generation still points at the waits it held, and through their callbacks at whole
 * ticks, which young collections then keep alive and promote. The array keeps its store (it only grows),
 * and a freed slot is emptied.
 */
class WaitList {
  private readonly slots: (Wait | undefined)[] = [];
  size = 0;
  at(i: number): Wait {
    return this.slots[i]!;
  }
  add(w: Wait): void {
    w.index = this.size;
    this.slots[this.size++] = w;
  }
  /** False when `w` is not pending here (it ran, was cleared, or is another clock's). */
  remove(w: Wait): boolean {
    const i = w.index;
    if (i < 0 || i >= this.size || this.slots[i] !== w) return false;
    const last = this.slots[--this.size]!;
    this.slots[this.size] = undefined;
    if (last !== w) {
      this.slots[i] = last;
      last.index = i;
    }
    w.index = -1;
    return true;
  }
}

export function coalescedClock(clock: Clock): Clock {
  const waits = new WaitList();
  let seq = 0;
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
    for (let i = 0; i < waits.size; i++) if (waits.at(i).at <= now) due.push(waits.at(i));
    due.sort((a, b) => a.at - b.at || a.seq - b.seq);
    const settled: Promise<unknown>[] = [];
    for (const w of due) {
      // Cancelled by an earlier callback of this round: it does not run.
      if (!waits.remove(w)) continue;
      try {
        const r = w.callback();
        if (r instanceof Promise) settled.push(r.catch(() => {}));
      } catch {
        // A timer callback's failure is its own (as with the clock beneath): the others still run.
      }
    }
    let next = Number.POSITIVE_INFINITY;
    for (let i = 0; i < waits.size; i++) next = Math.min(next, waits.at(i).at);
    if (next < armedAt) arm(next);
    return Promise.all(settled);
  }

  return {
    now: () => clock.now(),
    monotonicNow: mono,
    setTimer(callback, ms) {
      // NaN and negative delays mean "as soon as possible", as with `setTimeout`.
      const w = new Wait(mono() + (ms > 0 ? ms : 0), seq++, callback);
      waits.add(w);
      if (w.at < armedAt) arm(w.at);
      return w;
    },
    clearTimer(h) {
      // The timer beneath stays armed: when it fires it finds nothing due and arms for the next wait.
      if (!(h instanceof Wait)) return;
      waits.remove(h);
      if (waits.size === 0 && handle !== null) {
        clock.clearTimer(handle);
        handle = null;
        armedAt = Number.POSITIVE_INFINITY;
      }
    },
  };
}
