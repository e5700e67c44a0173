/**
 * @agent/timers — the one way the product waits. Node fires a `setTimeout` whose delay is above
 * 2^31-1 ms (about 24.8 days) after 1 ms, so a monthly deadline would fire at once; these helpers chain
 * such waits in steps instead and never fire early.
 */

/** The longest delay one Node timer honours: 2^31 - 1 ms, about 24.8 days. */
export const MAX_TIMEOUT_MS = 2 ** 31 - 1;

export interface TimerOptions {
  /** The timer does not keep the process alive (Node's `timeout.unref()`). */
  unref?: boolean;
}

/** A pending wait. `cancel()` may be called any number of times, also after the timer fired. */
export interface TimerHandle {
  cancel(): void;
}

/** What `sleep` waits with: `setTimer` itself, or a test's fake clock. */
export type Scheduler = (callback: () => void, ms: number) => TimerHandle;

/** NaN and negative delays mean "as soon as possible", as with `setTimeout`. */
function delayOf(ms: number): number {
  return ms > 0 ? ms : 0;
}

/**
 * One pending wait: a small object whose methods live on the prototype, so a timer costs one object and its
 * Node timer, not a set of closures (a daemon arms several per poller tick).
 */
class ChainedTimer implements TimerHandle {
  private current: NodeJS.Timeout | undefined;
  private left: number;

  constructor(
    private readonly callback: () => void,
    ms: number,
    private readonly unref: boolean,
  ) {
    this.left = delayOf(ms);
    this.step();
  }

  private step(): void {
    const wait = Math.min(this.left, MAX_TIMEOUT_MS);
    this.left -= wait;
    this.current = setTimeout(onStep, wait, this);
    if (this.unref) this.current.unref();
  }

  /** One step elapsed: the next one, or the callback once no time is left. */
  stepped(): void {
    if (this.left > 0) {
      this.step();
      return;
    }
    this.current = undefined;
    this.callback();
  }

  cancel(): void {
    if (this.current !== undefined) clearTimeout(this.current);
    this.current = undefined;
  }
}

function onStep(timer: ChainedTimer): void {
  timer.stepped();
}

/**
 * Calls `callback` once, `ms` from now. A delay above `MAX_TIMEOUT_MS` is waited in steps of at most
 * `MAX_TIMEOUT_MS`; `Infinity` never fires.
 */
export function setTimer(callback: () => void, ms: number, options?: TimerOptions): TimerHandle {
  return new ChainedTimer(callback, ms, options?.unref === true);
}

/**
 * Resolves `true` after `ms`, or `false` as soon as `signal` aborts (at once when it already has). It
 * never rejects, and leaves no listener on `signal`. `schedule` replaces the real timer (fake clocks).
 */
export function sleep(ms: number, signal?: AbortSignal, schedule: Scheduler = setTimer): Promise<boolean> {
  if (signal?.aborted) return Promise.resolve(false);
  const delay = delayOf(ms);
  if (delay === 0) return Promise.resolve(true);
  return new Promise((resolve) => {
    const onAbort = (): void => {
      timer.cancel();
      resolve(false);
    };
    const timer = schedule(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve(true);
    }, delay);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** A signal that aborts by itself; `cancel()` stops its timer once the work it bounds is over. */
export interface TimeoutSignal extends TimerHandle {
  readonly signal: AbortSignal;
}

/**
 * Like `AbortSignal.timeout(ms)`: the signal aborts after `ms` with a `TimeoutError` DOMException. Unlike
 * it, the wait is chained past `MAX_TIMEOUT_MS` and can be cancelled.
 */
export function timeoutSignal(ms: number, options: TimerOptions = {}): TimeoutSignal {
  const controller = new AbortController();
  const timer = setTimer(
    () => controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')),
    ms,
    options,
  );
  return { signal: controller.signal, cancel: () => timer.cancel() };
}

/**
 * Resolves after one turn of the event loop (a `setImmediate`): pending I/O callbacks and due timers run
 * first. Long synchronous work awaits it between chunks so that servers and other jobs keep answering.
 */
export function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Cooperative time slicing: see `timeSlicer`. */
export interface TimeSlicer {
  /** True once `budgetMs` of work ran since the last yield. */
  due(): boolean;
  /** Yields when due (one event-loop turn), otherwise resolves at once without a turn. */
  maybeYield(): Promise<void>;
}

/**
 * Splits long work into slices of about `budgetMs`: call `await slicer.maybeYield()` between small steps.
 * Yielding only when the budget is spent keeps the cost of small inputs at a clock read per step, and a
 * test under fake timers never waits for a turn it does not drive (small inputs never yield).
 */
export function timeSlicer(budgetMs = 8, now: () => number = () => performance.now()): TimeSlicer {
  let start = now();
  const due = (): boolean => now() - start >= budgetMs;
  return {
    due,
    async maybeYield() {
      if (!due()) return;
      await yieldToEventLoop();
      start = now();
    },
  };
}
