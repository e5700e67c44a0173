/**
 * One timer per job on the shared clock. It arms what next-run decided and, when a timer fires, hands the
 * job to `onDue`; it decides no run time itself.
 */
import type { Clock } from './clock.js';
import type { JobRuntime } from './job.js';
import { armTime } from './next-run.js';
import type { JobState, StateStore } from './store.js';

export interface Scheduler {
  /** Arms the job's timer for `at` (ms since the epoch), replacing any earlier one. */
  armAt(rt: JobRuntime, at: number): void;
  /** Arms the job's timer from its stored state (none when paused or done). */
  arm(rt: JobRuntime): Promise<void>;
  /** `arm` with the stored state already read. */
  armFrom(rt: JobRuntime, state: JobState | null): void;
  disarm(rt: JobRuntime): void;
}

export function createScheduler(deps: {
  clock: Clock;
  store: StateStore;
  stopped(): boolean;
  onDue(rt: JobRuntime): Promise<unknown>;
}): Scheduler {
  const { clock, store } = deps;
  const inactive = (rt: JobRuntime) => deps.stopped() || rt.retired;

  const disarm = (rt: JobRuntime) => {
    if (rt.timer !== null) clock.clearTimer(rt.timer);
    rt.timer = null;
  };

  const armAt = (rt: JobRuntime, at: number) => {
    disarm(rt);
    if (inactive(rt)) return;
    // The clock waits any delay (long ones chained); an early wake means the wall clock lags the timer.
    rt.timer = clock.setTimer(
      () => {
        rt.timer = null;
        if (clock.now() < at) {
          armAt(rt, at);
          return;
        }
        return deps.onDue(rt);
      },
      Math.max(0, at - clock.now()),
    );
  };

  const armFrom = (rt: JobRuntime, state: JobState | null) => {
    const at = armTime(state);
    if (at === null || inactive(rt)) disarm(rt);
    else armAt(rt, at);
  };
  const arm = async (rt: JobRuntime) => armFrom(rt, await store.load(rt.def.id));

  return { armAt, arm, armFrom, disarm };
}
