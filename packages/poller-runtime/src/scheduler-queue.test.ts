import { describe, expect, it } from 'vitest';
import { systemClock } from './clock.js';
import { newJob, type JobRuntime } from './job.js';
import { createScheduler, DEFAULT_ROUND_MS, roundOf } from './scheduler.js';
import { createFakeClock, createMemoryStateStore } from './testing.js';
import type { JobDefinition } from './validate.js';

const rtOf = (id: string): JobRuntime => newJob({ id } as JobDefinition);

/** A scheduler that records each run's id and time; `roundMs` 0 (every run at its exact time) unless given. */
function setup(clock = createFakeClock(), roundMs = 0) {
  const fired: [string, number][] = [];
  let stopped = false;
  const scheduler = createScheduler({
    clock,
    store: createMemoryStateStore({ now: () => clock.now() }),
    stopped: () => stopped,
    onDue: async (rt) => void fired.push([rt.def.id, clock.now()]),
    roundMs,
  });
  return { clock, scheduler, fired, stop: () => (stopped = true) };
}

describe('scheduler: every job under one clock timer', () => {
  it('fires each job at its time, in time order, with one pending clock timer', async () => {
    const { clock, scheduler, fired } = setup();
    const t0 = clock.now();
    const jobs = ['c', 'a', 'b'].map(rtOf);
    scheduler.armAt(jobs[0]!, t0 + 300);
    scheduler.armAt(jobs[1]!, t0 + 100);
    scheduler.armAt(jobs[2]!, t0 + 200);
    expect(clock.pendingTimers()).toBe(1);
    expect(clock.nextTimerAt()).toBe(t0 + 100);
    await clock.advance(1000);
    expect(fired).toEqual([
      ['a', t0 + 100],
      ['b', t0 + 200],
      ['c', t0 + 300],
    ]);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('re-arming moves a job (earlier or later) and disarming drops it; the last disarm leaves no timer', async () => {
    const { clock, scheduler, fired } = setup();
    const t0 = clock.now();
    const [a, b] = ['a', 'b'].map(rtOf) as [JobRuntime, JobRuntime];
    scheduler.armAt(a, t0 + 500);
    scheduler.armAt(b, t0 + 600);
    scheduler.armAt(a, t0 + 50);
    scheduler.armAt(b, t0 + 900);
    await clock.advance(700);
    expect(fired).toEqual([['a', t0 + 50]]);
    scheduler.disarm(b);
    expect(clock.pendingTimers()).toBe(0);
    await clock.advance(1000);
    expect(fired).toHaveLength(1);
  });

  it('a job due at the same instant as others fires with them, once each', async () => {
    const { clock, scheduler, fired } = setup();
    const t0 = clock.now();
    const jobs = Array.from({ length: 50 }, (_, i) => rtOf(`j${i}`));
    for (const rt of jobs) scheduler.armAt(rt, t0 + 10);
    await clock.advance(10);
    expect(fired.map(([id]) => id)).toEqual(jobs.map((rt) => rt.def.id));
  });

  it('an early wake (the wall clock stepped back) waits again instead of firing early', async () => {
    const { clock, scheduler, fired } = setup();
    const t0 = clock.now();
    scheduler.armAt(rtOf('a'), t0 + 1000);
    clock.jumpWall(-400);
    await clock.advance(1000);
    expect(fired).toEqual([]);
    await clock.advance(400);
    expect(fired).toEqual([['a', t0 + 1000]]);
  });

  it('after the wall clock steps forward, a run armed for soon is not held back by a later pending wake-up', async () => {
    const { clock, scheduler, fired } = setup();
    const t0 = clock.now();
    scheduler.armAt(rtOf('a'), t0 + 10_000);
    clock.jumpWall(20_000);
    // Due in 1 s of wall time, a later wall time than the pending wake-up (armed for 10 s of the timer's time).
    scheduler.armAt(rtOf('b'), clock.now() + 1000);
    await clock.advance(1000);
    expect(fired.map(([id]) => id).sort()).toEqual(['a', 'b']);
  });

  it('an onDue that throws or arms its job again at once spoils no round', async () => {
    const clock = createFakeClock();
    const fired: string[] = [];
    const scheduler = createScheduler({
      clock,
      store: createMemoryStateStore({ now: () => clock.now() }),
      stopped: () => false,
      roundMs: 0,
      onDue: (rt) => {
        fired.push(rt.def.id);
        if (rt.def.id === 'thrower') throw new Error('sync failure');
        // Armed again for now: it runs again in the next round, not twice in this one (nor forever).
        if (rt.def.id === 'again' && fired.filter((id) => id === 'again').length < 3)
          scheduler.armAt(rt, clock.now());
        return Promise.resolve();
      },
    });
    const t0 = clock.now();
    for (const id of ['thrower', 'again', 'after']) scheduler.armAt(rtOf(id), t0 + 10);
    await clock.advance(10);
    expect(fired).toEqual(['thrower', 'again', 'after', 'again', 'again']);
  });

  it('a job re-armed many times fires once, at its last time', async () => {
    const { clock, scheduler, fired } = setup();
    const t0 = clock.now();
    const jobs = Array.from({ length: 100 }, (_, i) => rtOf(`j${i}`));
    // Like a hundred reloads of monthly jobs: none of these times is reached before the next re-arm.
    for (let round = 0; round < 100; round++)
      for (const rt of jobs) scheduler.armAt(rt, t0 + 30 * 86_400_000 + round);
    await clock.advance(30 * 86_400_000 + 1000);
    expect(fired).toHaveLength(100);
    expect(new Set(fired.map(([, at]) => at))).toEqual(new Set([t0 + 30 * 86_400_000 + 99]));
  });

  it('a stopped scheduler arms nothing', async () => {
    const { clock, scheduler, fired, stop } = setup();
    stop();
    scheduler.armAt(rtOf('a'), clock.now() + 10);
    await clock.advance(100);
    expect(fired).toEqual([]);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('on the real clock: jobs fire in order, not before their time, and a later re-arm of the head is honoured', async () => {
    const clock = systemClock;
    const { scheduler, fired } = setup(clock as never);
    const t0 = Date.now();
    const [a, b, c] = ['a', 'b', 'c'].map(rtOf) as [JobRuntime, JobRuntime, JobRuntime];
    scheduler.armAt(a, t0 + 40);
    scheduler.armAt(b, t0 + 80);
    scheduler.armAt(c, t0 + 20);
    // The head moves later: the clock timer armed for it must not fire `c` early.
    scheduler.armAt(c, t0 + 120);
    await new Promise((r) => setTimeout(r, 250));
    expect(fired.map(([id]) => id)).toEqual(['a', 'b', 'c']);
    for (const [id, at] of fired) expect(at).toBeGreaterThanOrEqual(t0 + { a: 40, b: 80, c: 120 }[id]!);
  });
});

describe('scheduler: rounds', () => {
  it('a round is 0 or a whole number of ms that divides a second', () => {
    for (const ok of [0, 1, 100, 125, 250, 500, 1000])
      expect(() => setup(createFakeClock(), ok)).not.toThrow();
    for (const bad of [-250, 0.5, 300, 2000, Number.NaN, Number.POSITIVE_INFINITY])
      expect(() => setup(createFakeClock(), bad)).toThrow(RangeError);
  });

  it('roundOf: the first multiple of the round at or after the time; 0 keeps the time', () => {
    const cases: [number, number, number][] = [
      [1000, 250, 1000],
      [1001, 250, 1250],
      [1249, 250, 1250],
      [1250, 250, 1250],
      [1, 1000, 1000],
      [1234, 0, 1234],
    ];
    for (const [at, round, want] of cases) expect(roundOf(at, round)).toBe(want);
  });

  it('runs due within a round start together at its end, with one pending clock timer', async () => {
    // Starts on a whole second, which is a round boundary.
    const { clock, scheduler, fired } = setup(createFakeClock(), 250);
    const t0 = clock.now();
    expect(t0 % 250).toBe(0);
    const [a, b, c] = ['a', 'b', 'c'].map(rtOf) as [JobRuntime, JobRuntime, JobRuntime];
    scheduler.armAt(b, t0 + 200);
    scheduler.armAt(a, t0 + 10);
    scheduler.armAt(c, t0 + 260);
    expect(clock.pendingTimers()).toBe(1);
    expect(clock.nextTimerAt()).toBe(t0 + 250);
    await clock.advance(249);
    expect(fired).toEqual([]);
    await clock.advance(1);
    // Within the round, in time order.
    expect(fired).toEqual([
      ['a', t0 + 250],
      ['b', t0 + 250],
    ]);
    await clock.advance(250);
    expect(fired.at(-1)).toEqual(['c', t0 + 500]);
  });

  it('a run on a whole second is not late, and a run whose time has come starts at once', async () => {
    const { clock, scheduler, fired } = setup(createFakeClock(), DEFAULT_ROUND_MS);
    const t0 = clock.now();
    scheduler.armAt(rtOf('on-the-second'), t0 + 5000);
    await clock.advance(5000);
    expect(fired).toEqual([['on-the-second', t0 + 5000]]);
    await clock.advance(7);
    // Due now (or overdue): no wait for the next round.
    scheduler.armAt(rtOf('due-now'), clock.now());
    scheduler.armAt(rtOf('overdue'), clock.now() - 3000);
    await clock.advance(0);
    expect(fired.slice(1)).toEqual([
      ['overdue', t0 + 5007],
      ['due-now', t0 + 5007],
    ]);
  });

  it('on the real clock: a run waits for its round, never longer', async () => {
    const round = 100;
    const { scheduler, fired } = setup(systemClock as never, round);
    const t0 = Date.now();
    scheduler.armAt(rtOf('a'), t0 + 30);
    for (let waited = 0; fired.length === 0 && waited < 5000; waited += 20)
      await new Promise((r) => setTimeout(r, 20));
    expect(fired).toHaveLength(1);
    const at = fired[0]![1];
    // Never before its time (the round's end is checked on the fake clock, above).
    expect(at).toBeGreaterThanOrEqual(t0 + 30);
    // The round's end, plus the timer's own lateness on a loaded machine (generous: not the next rounds).
    expect(at).toBeLessThan(roundOf(t0 + 30, round) + 1000);
  });
});
