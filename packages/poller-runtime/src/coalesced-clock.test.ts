import { describe, expect, it } from 'vitest';
import { systemClock } from './clock.js';
import { coalescedClock } from './coalesced-clock.js';
import { createFakeClock } from './testing.js';

describe('coalescedClock', () => {
  it('runs every wait at its time, in time order, over one timer of the clock beneath', async () => {
    const fake = createFakeClock();
    const clock = coalescedClock(fake);
    const ran: [string, number][] = [];
    const at = (name: string) => () => void ran.push([name, fake.monotonicNow()]);
    clock.setTimer(at('c'), 300);
    clock.setTimer(at('a'), 100);
    clock.setTimer(at('b1'), 200);
    clock.setTimer(at('b2'), 200);
    expect(fake.pendingTimers()).toBe(1);
    await fake.advance(1000);
    expect(ran).toEqual([
      ['a', 100],
      ['b1', 200],
      ['b2', 200],
      ['c', 300],
    ]);
    expect(fake.pendingTimers()).toBe(0);
  });

  it('a cancelled wait never runs, also when an earlier callback of the same round cancels it', async () => {
    const fake = createFakeClock();
    const clock = coalescedClock(fake);
    const ran: string[] = [];
    const gone = clock.setTimer(() => void ran.push('gone'), 50);
    let later: unknown = null;
    clock.setTimer(() => {
      ran.push('first');
      clock.clearTimer(later);
    }, 100);
    later = clock.setTimer(() => void ran.push('later'), 100);
    clock.clearTimer(gone);
    await fake.advance(500);
    expect(ran).toEqual(['first']);
  });

  it('clearing the last wait leaves no timer beneath; a failing callback does not stop the others', async () => {
    const fake = createFakeClock();
    const clock = coalescedClock(fake);
    const h = clock.setTimer(() => {}, 10_000);
    clock.clearTimer(h);
    expect(fake.pendingTimers()).toBe(0);
    const ran: string[] = [];
    clock.setTimer(() => {
      throw new Error('boom');
    }, 10);
    clock.setTimer(() => Promise.reject(new Error('async boom')), 10);
    clock.setTimer(() => void ran.push('ok'), 10);
    await fake.advance(10);
    expect(ran).toEqual(['ok']);
  });

  it('waits due together run in the order they were set, also after others were cleared in between', async () => {
    const fake = createFakeClock();
    const clock = coalescedClock(fake);
    const ran: string[] = [];
    const handles = ['a', 'b', 'c', 'd', 'e', 'f'].map((name) =>
      clock.setTimer(() => void ran.push(name), 100),
    );
    // Clearing moves the last pending wait into the freed place: the order of setting still decides.
    clock.clearTimer(handles[1]);
    clock.clearTimer(handles[3]);
    clock.setTimer(() => void ran.push('g'), 100);
    await fake.advance(100);
    expect(ran).toEqual(['a', 'c', 'e', 'f', 'g']);
  });

  it('clearing twice, clearing what already ran, or a handle of another clock touches nothing here', async () => {
    const fake = createFakeClock();
    const clock = coalescedClock(fake);
    const other = coalescedClock(createFakeClock());
    const ran: string[] = [];
    const first = clock.setTimer(() => void ran.push('first'), 10);
    clock.setTimer(() => void ran.push('second'), 20);
    clock.setTimer(() => void ran.push('third'), 30);
    const foreign = other.setTimer(() => {}, 10);
    clock.clearTimer(foreign);
    clock.clearTimer(null);
    clock.clearTimer(42);
    await fake.advance(10);
    clock.clearTimer(first);
    clock.clearTimer(first);
    await fake.advance(30);
    expect(ran).toEqual(['first', 'second', 'third']);
  });

  it('NaN and negative delays run as soon as possible; an infinite one never', async () => {
    const fake = createFakeClock();
    const clock = coalescedClock(fake);
    const ran: string[] = [];
    clock.setTimer(() => void ran.push('nan'), Number.NaN);
    clock.setTimer(() => void ran.push('negative'), -5);
    clock.setTimer(() => void ran.push('never'), Number.POSITIVE_INFINITY);
    await fake.advance(0);
    expect(ran).toEqual(['nan', 'negative']);
    await fake.advance(365 * 86_400_000);
    expect(ran).toEqual(['nan', 'negative']);
  });

  it('on the real clock: a later wait set first and an earlier one set after both run, never early', async () => {
    const clock = coalescedClock(systemClock);
    const t0 = performance.now();
    const ran: [string, number][] = [];
    clock.setTimer(() => void ran.push(['late', performance.now() - t0]), 80);
    clock.setTimer(() => void ran.push(['early', performance.now() - t0]), 20);
    const dropped = clock.setTimer(() => void ran.push(['dropped', 0]), 40);
    clock.clearTimer(dropped);
    await new Promise((r) => setTimeout(r, 200));
    expect(ran.map(([n]) => n)).toEqual(['early', 'late']);
    expect(ran[0]![1]).toBeGreaterThanOrEqual(20);
    expect(ran[1]![1]).toBeGreaterThanOrEqual(80);
  });
});
