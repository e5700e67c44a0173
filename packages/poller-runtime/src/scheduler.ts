/**
 * Every job's next run in one queue under one clock timer, armed for the earliest. It arms what next-run
 * decided and, when a run is due, hands the job to `onDue`; it decides no run time itself, but gathers runs
 * into rounds (see `roundOf`).
 */
import { monotonicNow, type Clock } from './clock.js';
import type { JobRuntime } from './job.js';
import { armTime } from './next-run.js';
import type { JobState, StateStore } from './store.js';
import { TimerQueue, type QueuedWake } from './timer-queue.js';

export interface Scheduler {
  /** Arms the job's timer for `at` (ms since the epoch), replacing any earlier one. */
  armAt(rt: JobRuntime, at: number): void;
  /** Arms the job's timer from its stored state (none when paused or done). */
  arm(rt: JobRuntime): Promise<void>;
  /** `arm` with the stored state already read. */
  armFrom(rt: JobRuntime, state: JobState | null): void;
  disarm(rt: JobRuntime): void;
}

/**
 * The default length of a round (ms). Ticks spread evenly over the minute each ran with every cache cold
 * (code, SQLite's pages, the socket path): at 10,000 jobs a minute, gathering them into four rounds a second
 * halved the CPU of a tick. A round adds at most its length to when a run starts.
 */
export const DEFAULT_ROUND_MS = 250;

/**
 * The wall-clock time of the round that runs a job due at `at`: the first multiple of `roundMs` at or after
 * it (`at` itself when `roundMs` is 0). A round divides a second, so a time on a whole second (an unjittered
 * cron or `at` run) is a round's end: not delayed.
 */
export function roundOf(at: number, roundMs: number): number {
  return roundMs > 0 ? Math.ceil(at / roundMs) * roundMs : at;
}

/** Stale entries (of re-armed or disarmed jobs) are dropped once they outnumber the live ones by this. */
const STALE_SLACK = 1024;

/** A job's live entry is `rt.timer`; an entry it no longer points to is stale and skipped when reached. */
const live = (e: QueuedWake<JobRuntime>) => e.item.timer === e;

export function createScheduler(deps: {
  clock: Clock;
  store: StateStore;
  stopped(): boolean;
  onDue(rt: JobRuntime): Promise<unknown>;
  /** Length of a round in ms, 0 or a divisor of 1000 (default `DEFAULT_ROUND_MS`; 0: every run at its own time). */
  roundMs?: number;
}): Scheduler {
  const { clock, store } = deps;
  const roundMs = deps.roundMs ?? DEFAULT_ROUND_MS;
  if (!Number.isInteger(roundMs) || roundMs < 0 || (roundMs > 0 && 1000 % roundMs !== 0))
    throw new RangeError(`roundMs must be 0 or a whole number of ms that divides 1000, not ${roundMs}`);
  const inactive = (rt: JobRuntime) => deps.stopped() || rt.retired;
  const queue = new TimerQueue<JobRuntime>();
  let armed = 0;
  // `due` is on the monotonic clock, which the timer beneath waits on: after the wall clock steps forward, a
  // run armed for an earlier wall time than the pending wake-up is still due sooner, and gets its own.
  let wake: { due: number; handle: unknown } | null = null;

  /** The clock timer fires by the round of the wall-clock time `at` (at once when that time has come), or earlier. */
  const wakeBy = (at: number) => {
    const now = clock.now();
    const delay = at <= now ? 0 : roundOf(at, roundMs) - now;
    const due = monotonicNow(clock) + delay;
    if (wake !== null && wake.due <= due) return;
    if (wake !== null) clock.clearTimer(wake.handle);
    wake = { due, handle: clock.setTimer(fire, delay) };
  };

  // A job's `onDue` that throws fails that job's run only, never the round of the others.
  const due = (rt: JobRuntime): Promise<unknown> => {
    try {
      return deps.onDue(rt).catch(() => {});
    } catch {
      return Promise.resolve();
    }
  };

  // Hands every due job to `onDue`; an early wake (the wall clock lags the timer) waits again. A job armed
  // again during the round (an `onDue` that arms at once) waits for the next round, so a round always ends.
  function fire(): Promise<unknown> {
    wake = null;
    const now = clock.now();
    const roundEnd = queue.nextSeqToIssue;
    const runs: Promise<unknown>[] = [];
    for (let top = queue.peek(); top !== undefined; top = queue.peek()) {
      if (!live(top)) queue.pop();
      else if (top.at > now || top.seq >= roundEnd) break;
      else {
        queue.pop();
        top.item.timer = null;
        armed--;
        runs.push(due(top.item));
      }
    }
    const next = queue.peek();
    if (next !== undefined) wakeBy(next.at);
    return Promise.all(runs);
  }

  const disarm = (rt: JobRuntime) => {
    if (rt.timer === null) return;
    rt.timer = null;
    armed--;
    if (armed === 0 && wake !== null) {
      // Nothing left to wake for (a shutdown disarms every job): no timer stays behind.
      clock.clearTimer(wake.handle);
      wake = null;
    }
    if (queue.size > 2 * armed + STALE_SLACK || armed === 0) queue.retain(live);
  };

  const armAt = (rt: JobRuntime, at: number) => {
    disarm(rt);
    if (inactive(rt)) return;
    rt.timer = queue.push(at, rt);
    armed++;
    wakeBy(at);
  };

  const armFrom = (rt: JobRuntime, state: JobState | null) => {
    const at = armTime(state);
    if (at === null || inactive(rt)) disarm(rt);
    else armAt(rt, at);
  };
  const arm = async (rt: JobRuntime) => armFrom(rt, await store.load(rt.def.id));

  return { armAt, arm, armFrom, disarm };
}
