import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  MAX_TIMEOUT_MS,
  setTimer,
  sleep,
  timeoutSignal,
  timeSlicer,
  yieldToEventLoop,
  type Scheduler,
} from './index.js';

const DAY = 24 * 3_600_000;

/**
 * Collects the process warnings emitted while `fn` runs (and the ticks after it). Node's own printer is
 * detached meanwhile, so the expected warning of the control test does not litter the test output.
 */
async function warningsDuring(fn: () => Promise<void>): Promise<Error[]> {
  const seen: Error[] = [];
  const onWarning = (w: Error) => void seen.push(w);
  const others = process.listeners('warning');
  process.removeAllListeners('warning');
  process.on('warning', onWarning);
  try {
    await fn();
    // `process.emitWarning` delivers on a later tick.
    await new Promise<void>((r) => setImmediate(r));
  } finally {
    process.off('warning', onWarning);
    for (const l of others) process.on('warning', l);
  }
  return seen;
}

const realWait = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

afterEach(() => {
  // In this order: a spy made under fake timers would otherwise put the fake setTimeout back.
  vi.restoreAllMocks();
  vi.useRealTimers();
});

describe('setTimer on the real clock', () => {
  it('a 30-day timer does not fire early and makes Node print no TimeoutOverflowWarning', async () => {
    let fired = false;
    const warnings = await warningsDuring(async () => {
      const timer = setTimer(() => (fired = true), 30 * DAY);
      await realWait(50);
      timer.cancel();
    });
    expect(fired).toBe(false);
    expect(warnings.map((w) => w.name)).not.toContain('TimeoutOverflowWarning');
  });

  it('the defect it avoids: a raw 30-day setTimeout fires within 50 ms, with a TimeoutOverflowWarning', async () => {
    let fired = false;
    const warnings = await warningsDuring(async () => {
      const raw = setTimeout(() => (fired = true), 30 * DAY);
      await realWait(50);
      clearTimeout(raw);
    });
    expect(fired).toBe(true);
    expect(warnings.map((w) => w.name)).toContain('TimeoutOverflowWarning');
  });

  it('fires after a short delay, once', async () => {
    let calls = 0;
    setTimer(() => calls++, 5);
    await realWait(40);
    expect(calls).toBe(1);
  });

  it('unref: the Node timers under it do not keep the process alive', () => {
    const spy = vi.spyOn(globalThis, 'setTimeout');
    const kept = setTimer(() => {}, 1000);
    const loose = setTimer(() => {}, 1000, { unref: true });
    const [keptTimeout, looseTimeout] = spy.mock.results.map((r) => r.value as NodeJS.Timeout);
    expect(keptTimeout!.hasRef()).toBe(true);
    expect(looseTimeout!.hasRef()).toBe(false);
    kept.cancel();
    loose.cancel();
  });
});

describe('setTimer chaining (fake timers reproduce Node: a delay above the maximum becomes 1 ms)', () => {
  it('a timer just above MAX_TIMEOUT_MS fires only after the whole chain, in steps of at most the maximum', () => {
    vi.useFakeTimers();
    const spy = vi.spyOn(globalThis, 'setTimeout');
    let fired = false;
    setTimer(() => (fired = true), MAX_TIMEOUT_MS + 5);
    expect(spy.mock.calls[0]![1]).toBe(MAX_TIMEOUT_MS);
    vi.advanceTimersByTime(MAX_TIMEOUT_MS);
    expect(fired).toBe(false);
    expect(spy.mock.calls[1]![1]).toBe(5);
    vi.advanceTimersByTime(4);
    expect(fired).toBe(false);
    vi.advanceTimersByTime(1);
    expect(fired).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('the fake timers do reproduce the overflow: a raw setTimeout above the maximum fires after 1 ms', () => {
    vi.useFakeTimers();
    let fired = false;
    setTimeout(() => (fired = true), MAX_TIMEOUT_MS + 5);
    vi.advanceTimersByTime(1);
    expect(fired).toBe(true);
  });

  it('a yearly timer fires after 365 days, not before', () => {
    vi.useFakeTimers();
    let fired = false;
    setTimer(() => (fired = true), 365 * DAY);
    vi.advanceTimersByTime(365 * DAY - 1);
    expect(fired).toBe(false);
    vi.advanceTimersByTime(1);
    expect(fired).toBe(true);
  });

  it('cancel stops the chain, also between two steps', () => {
    vi.useFakeTimers();
    let fired = false;
    const before = setTimer(() => (fired = true), 100);
    before.cancel();
    const between = setTimer(() => (fired = true), 2 * MAX_TIMEOUT_MS);
    vi.advanceTimersByTime(MAX_TIMEOUT_MS + 1);
    between.cancel();
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(3 * MAX_TIMEOUT_MS);
    expect(fired).toBe(false);
    between.cancel();
  });

  it('NaN and negative delays fire as soon as possible; Infinity never fires', () => {
    vi.useFakeTimers();
    const fired: string[] = [];
    setTimer(() => fired.push('nan'), Number.NaN);
    setTimer(() => fired.push('negative'), -5);
    const never = setTimer(() => fired.push('infinity'), Number.POSITIVE_INFINITY);
    vi.advanceTimersByTime(0);
    expect(fired).toEqual(['nan', 'negative']);
    vi.advanceTimersByTime(10 * MAX_TIMEOUT_MS);
    expect(fired).toEqual(['nan', 'negative']);
    never.cancel();
  });
});

describe('sleep', () => {
  it('resolves true after the delay', async () => {
    const started = Date.now();
    expect(await sleep(20)).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(15);
  });

  it('resolves false at once for an aborted signal, and true at once for no delay', async () => {
    expect(await sleep(10_000, AbortSignal.abort())).toBe(false);
    expect(await sleep(0)).toBe(true);
    expect(await sleep(-1)).toBe(true);
  });

  it('resolves false as soon as the signal aborts, and cancels its timer', async () => {
    vi.useFakeTimers();
    const ctl = new AbortController();
    const pending = sleep(30 * DAY, ctl.signal);
    expect(vi.getTimerCount()).toBe(1);
    ctl.abort(new Error('stop'));
    expect(await pending).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('leaves no listener on a long-lived signal', async () => {
    const ctl = new AbortController();
    for (let i = 0; i < 20; i++) expect(await sleep(1, ctl.signal)).toBe(true);
    expect(getEventListeners(ctl.signal, 'abort')).toHaveLength(0);
    const pending = sleep(10_000, ctl.signal);
    expect(getEventListeners(ctl.signal, 'abort')).toHaveLength(1);
    ctl.abort();
    expect(await pending).toBe(false);
    expect(getEventListeners(ctl.signal, 'abort')).toHaveLength(0);
  });

  it('waits with the given scheduler', async () => {
    const pending: { cb: () => void; ms: number }[] = [];
    const schedule: Scheduler = (cb, ms) => {
      const entry = { cb, ms };
      pending.push(entry);
      return { cancel: () => void pending.splice(pending.indexOf(entry), 1) };
    };
    const done = sleep(5000, undefined, schedule);
    expect(pending.map((p) => p.ms)).toEqual([5000]);
    pending[0]!.cb();
    expect(await done).toBe(true);
  });
});

describe('timeoutSignal', () => {
  it('aborts with a TimeoutError after the delay, not before', () => {
    vi.useFakeTimers();
    const t = timeoutSignal(1000);
    vi.advanceTimersByTime(999);
    expect(t.signal.aborted).toBe(false);
    vi.advanceTimersByTime(1);
    expect(t.signal.aborted).toBe(true);
    expect((t.signal.reason as Error).name).toBe('TimeoutError');
  });

  it('a 30-day timeout waits the whole 30 days', () => {
    vi.useFakeTimers();
    const t = timeoutSignal(30 * DAY);
    vi.advanceTimersByTime(30 * DAY - 1);
    expect(t.signal.aborted).toBe(false);
    vi.advanceTimersByTime(1);
    expect(t.signal.aborted).toBe(true);
  });

  it('cancel keeps the signal from aborting', () => {
    vi.useFakeTimers();
    const t = timeoutSignal(1000);
    t.cancel();
    vi.advanceTimersByTime(2000);
    expect(t.signal.aborted).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('yieldToEventLoop and timeSlicer', () => {
  it('yieldToEventLoop resolves after a turn of the event loop, not in the same microtask queue', async () => {
    const order: string[] = [];
    setImmediate(() => order.push('queued before'));
    void Promise.resolve().then(() => order.push('microtask'));
    await yieldToEventLoop();
    order.push('after yield');
    expect(order).toEqual(['microtask', 'queued before', 'after yield']);
  });

  it('timeSlicer yields only once its budget is spent', async () => {
    let t = 0;
    const slicer = timeSlicer(10, () => t);
    let turns = 0;
    const counter = setImmediate(() => turns++);
    t = 5;
    expect(slicer.due()).toBe(false);
    await slicer.maybeYield();
    expect(turns).toBe(0);
    t = 12;
    expect(slicer.due()).toBe(true);
    await slicer.maybeYield();
    expect(turns).toBe(1);
    // The budget starts again after a yield.
    expect(slicer.due()).toBe(false);
    clearImmediate(counter);
  });
});
