// The nemesis schedule: a pure function of the seed and the run's shape.
import { describe, expect, it } from 'vitest';
import {
  describeSchedule,
  FAULT_KINDS,
  nemesisSchedule,
  seededRandom,
  type FaultEvent,
  type FaultKind,
  type ScheduleOptions,
} from './nemesis.js';

const base: ScheduleOptions = { seed: 42, runMs: 600_000, daemons: 3, ttlMs: 3000 };

describe('nemesis schedule', () => {
  it('is the same for the same seed and differs for another', () => {
    expect(nemesisSchedule(base)).toEqual(nemesisSchedule({ ...base }));
    expect(nemesisSchedule({ ...base, seed: 43 })).not.toEqual(nemesisSchedule(base));
  });

  it('the generator is deterministic and in [0, 1)', () => {
    const a = seededRandom(7);
    const b = seededRandom(7);
    const xs = Array.from({ length: 1000 }, () => a());
    expect(xs).toEqual(Array.from({ length: 1000 }, () => b()));
    expect(Math.min(...xs)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...xs)).toBeLessThan(1);
  });

  it.each([1, 2, 3, 99, 2 ** 31 - 1])(
    'seed %i: faults start 8-15 s apart, never overlap, and heal within the run',
    (seed) => {
      const events = nemesisSchedule({ ...base, seed });
      expect(events.length).toBeGreaterThan(20);
      expect(events[0]!.at).toBeGreaterThanOrEqual(8000);
      expect(events[0]!.at).toBeLessThanOrEqual(15_000);
      for (const [i, e] of events.entries()) {
        expect(e.at + e.durationMs).toBeLessThanOrEqual(base.runMs);
        const prev = events[i - 1];
        if (!prev) continue;
        const healed = prev.at + prev.durationMs + 1000;
        expect(e.at).toBeGreaterThanOrEqual(Math.max(prev.at + 8000, healed));
        expect(e.at === healed || e.at - prev.at <= 15_000).toBe(true);
      }
    },
  );

  const shape: [FaultKind, (e: FaultEvent) => boolean][] = [
    ['kill', (e) => e.durationMs >= 1000 && e.durationMs <= 5000 && e.target !== undefined],
    ['pause', (e) => e.durationMs === 6000 && e.target !== undefined],
    ['partition-db', (e) => e.durationMs === 6000 && e.target !== undefined],
    ['partition-nats', (e) => e.durationMs === 10_000 && e.target !== undefined],
    ['skew', (e) => Math.abs(e.skewSecs ?? 0) === 90 && e.durationMs === 20_000],
    ['db-restart', (e) => e.target === undefined && e.durationMs === 0],
  ];
  it.each(shape)('%s faults have their documented shape', (kind, ok) => {
    const events = nemesisSchedule({ ...base, kinds: [kind] });
    expect(events.length).toBeGreaterThan(10);
    expect(events.every((e) => e.kind === kind && ok(e))).toBe(true);
  });

  it('over a long run every kind, every daemon and both skew signs occur', () => {
    const events = nemesisSchedule({ ...base, runMs: 3_600_000 });
    expect(new Set(events.map((e) => e.kind))).toEqual(new Set(FAULT_KINDS));
    expect(new Set(events.flatMap((e) => (e.target === undefined ? [] : [e.target])))).toEqual(
      new Set([0, 1, 2]),
    );
    expect(new Set(events.flatMap((e) => (e.skewSecs === undefined ? [] : [Math.sign(e.skewSecs)])))).toEqual(
      new Set([-1, 1]),
    );
  });

  it('a run shorter than the first gap has no faults', () => {
    expect(nemesisSchedule({ ...base, runMs: 7000 })).toEqual([]);
  });

  it.each<[Partial<ScheduleOptions>, RegExp]>([
    [{ seed: 1.5 }, /seed must be an integer, got 1.5/],
    [{ daemons: 0 }, /needs at least one daemon, got 0/],
    [{ ttlMs: 0 }, /ttlMs must be > 0/],
    [{ kinds: [] }, /kinds is empty/],
    [{ gapMs: [10, 5] }, /gapMs must be \[lo, hi\] with 0 < lo <= hi, got \[10, 5\]/],
  ])('refuses %o', (bad, message) => {
    expect(() => nemesisSchedule({ ...base, ...bad })).toThrow(message);
  });

  it('describes a schedule with its seed, one line per fault', () => {
    const text = describeSchedule(5, [
      { at: 8000, kind: 'pause', target: 1, durationMs: 6000 },
      { at: 17_500, kind: 'skew', target: 0, durationMs: 20_000, skewSecs: 90 },
      { at: 40_000, kind: 'db-restart', durationMs: 0 },
    ]);
    expect(text).toBe(
      [
        'nemesis seed=5: 3 faults',
        '  t+8.0s pause daemon 1 for 6.0s',
        '  t+17.5s skew daemon 0 for 20.0s skew +90s',
        '  t+40.0s db-restart all for 0.0s',
      ].join('\n'),
    );
  });
});
