import { MAX_TIMEOUT_MS } from '@agent/timers';
import { describe, expect, it } from 'vitest';
import {
  breakerBackoffMs,
  jitterBound,
  leaseTtlMs,
  parseRfc3339,
  parseSchedule,
  phaseMs,
  transientBackoffMs,
  withJitter,
  type Schedule,
  type ScheduleSpec,
} from './schedule.js';

const T = (iso: string) => Date.parse(iso);
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

function must(spec: ScheduleSpec): Schedule {
  const r = parseSchedule(spec);
  if (!r.ok) throw new Error(r.errors.join('; '));
  return r.schedule;
}

function fires(s: Schedule, from: string, count: number): string[] {
  const out: string[] = [];
  let at = T(from);
  for (let i = 0; i < count; i++) {
    const n = s.slotAfter(at, at);
    if (n === null) break;
    out.push(iso(n)!);
    at = n;
  }
  return out;
}

describe('every_secs', () => {
  it('first slot is now and the grid never drifts, whatever the tick duration', () => {
    const s = must({ every_secs: 60 });
    const t0 = T('2026-01-01T00:00:00Z');
    expect(s.firstSlot(t0)).toBe(t0);
    expect(s.slotAfter(t0, t0 + 1)).toBe(t0 + 60_000);
    // A tick that finished 59.9 s late still lands on the grid.
    expect(s.slotAfter(t0 + 60_000, t0 + 119_900)).toBe(t0 + 120_000);
  });

  it('mean interval over 1000 jittered ticks stays within 1 % of the period', () => {
    const s = must({ every_secs: 60 });
    let slot = T('2026-01-01T00:00:00Z');
    const first = slot;
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    let lastRun = 0;
    for (let i = 0; i < 1000; i++) {
      const run = withJitter(slot, 5000, random);
      lastRun = run;
      slot = s.slotAfter(slot, run)!;
    }
    const mean = (lastRun - first) / 999;
    expect(Math.abs(mean - 60_000) / 60_000).toBeLessThan(0.01);
  });

  it('a daemon down for many intervals gets exactly one catch-up slot', () => {
    const s = must({ every_secs: 60 });
    const persisted = T('2026-01-01T00:00:00Z');
    const bootAt = persisted + 10 * 60_000 + 5_000;
    // The runner runs the overdue slot once at boot, then the next slot is the first one after now.
    expect(s.slotAfter(persisted, bootAt)).toBe(persisted + 11 * 60_000);
  });

  it('rejects a non-positive interval', () => {
    expect(parseSchedule({ every_secs: 0 }).ok).toBe(false);
  });
});

function every(secs: number, id: string): Schedule {
  const r = parseSchedule({ every_secs: secs }, { phaseKey: id });
  if (!r.ok) throw new Error(r.errors.join('; '));
  return r.schedule;
}

describe('every_secs: a phase of its own per job', () => {
  const t0 = T('2026-01-01T00:00:00Z');

  it('the phase is stable per id, below the interval, and not part of the key', () => {
    expect(phaseMs('feed-1', 60_000)).toBe(phaseMs('feed-1', 60_000));
    expect(phaseMs('feed-1', 60_000)).not.toBe(phaseMs('feed-2', 60_000));
    expect(phaseMs('', 60_000)).toBe(0);
    for (const step of [1000, 60_000, 86_400_000, 400 * 86_400_000])
      for (const id of ['a', 'b', 'feed-0042']) {
        expect(phaseMs(id, step)).toBeGreaterThanOrEqual(0);
        expect(phaseMs(id, step)).toBeLessThan(step);
      }
    expect(every(60, 'a').key).toBe(every(60, 'b').key);
  });

  it('a new job runs at once, then on its grid: the second run at least half an interval later', () => {
    for (const id of ['a', 'b', 'c', 'feed-0001', 'feed-0002']) {
      const s = every(60, id);
      const phase = phaseMs(id, 60_000);
      expect(s.firstSlot(t0)).toBe(t0);
      const second = s.slotAfter(t0, t0 + 200)!;
      expect((((second - phase) % 60_000) + 60_000) % 60_000, id).toBe(0);
      expect(second - t0, id).toBeGreaterThanOrEqual(30_000);
      expect(second - t0, id).toBeLessThan(90_000);
      // From then on exactly one interval apart, whatever the tick took.
      expect(s.slotAfter(second, second + 4_000)).toBe(second + 60_000);
      expect(s.slotAfter(second + 60_000, second + 60_001)).toBe(second + 120_000);
    }
  });

  it('a job stored on another grid moves onto its own once, never two runs less than half an interval apart', () => {
    const s = every(3600, 'hourly-job');
    const phase = phaseMs('hourly-job', 3_600_000);
    for (let prev = t0; prev < t0 + 3_600_000; prev += 97_000) {
      const next = s.slotAfter(prev, prev + 10)!;
      expect((next - phase) % 3_600_000).toBe(0);
      expect(next - prev).toBeGreaterThanOrEqual(1_800_000);
      expect(next - prev).toBeLessThan(5_400_000);
    }
  });

  it('a daemon down for hours gets one catch-up run, then the next slot of its grid', () => {
    const s = every(60, 'j');
    const phase = phaseMs('j', 60_000);
    const next = s.slotAfter(t0 + phase, t0 + phase + 5 * 3_600_000 + 1)!;
    expect(next).toBe(t0 + phase + 5 * 3_600_000 + 60_000);
  });

  it('1,000 jobs created together spread their second runs over the whole minute', () => {
    const buckets = Array.from({ length: 10 }, () => 0);
    for (let i = 0; i < 1000; i++) {
      const s = every(60, `feed-${String(i).padStart(4, '0')}`);
      const second = s.slotAfter(t0, t0 + 5)!;
      buckets[Math.floor(((second - t0) % 60_000) / 6000)]!++;
    }
    // Uniform would be 100 per 6 s; the same slot for all (the old behaviour) puts 1,000 in one bucket.
    for (const n of buckets) {
      expect(n).toBeGreaterThan(60);
      expect(n).toBeLessThan(140);
    }
  });
});

describe('cron', () => {
  it('fires on 6-field expressions in UTC by default', () => {
    expect(fires(must({ cron: '*/15 * * * * *' }), '2026-01-01T00:00:00Z', 4)).toEqual([
      '2026-01-01T00:00:15.000Z',
      '2026-01-01T00:00:30.000Z',
      '2026-01-01T00:00:45.000Z',
      '2026-01-01T00:01:00.000Z',
    ]);
  });

  it('rejects 5-field and 7-field expressions and macros', () => {
    for (const cron of ['0 * * * *', '0 0 0 * * * 2026', '@daily']) {
      const r = parseSchedule({ cron });
      expect(r.ok).toBe(false);
      if (!r.ok)
        expect([r.errors[0], r.field, r.hint]).toEqual([
          expect.stringMatching(/has (5 fields|7 fields|a macro)/),
          'cron',
          expect.stringMatching(/^write six fields: second 0-59/),
        ]);
    }
  });

  it('rejects out-of-range values', () => {
    const r = parseSchedule({ cron: '61 * * * * *' });
    expect(r.ok).toBe(false);
  });

  it('rejects expressions that never fire (Feb 30, Apr 31)', () => {
    for (const cron of ['0 0 0 30 2 *', '0 0 0 31 4 *']) {
      const r = parseSchedule({ cron });
      expect(r.ok).toBe(false);
    }
  });

  it('accepts Feb 29 (fires in leap years only)', () => {
    expect(fires(must({ cron: '0 0 0 29 2 *' }), '2026-01-01T00:00:00Z', 1)).toEqual([
      '2028-02-29T00:00:00.000Z',
    ]);
  });

  it('rejects an unknown tz', () => {
    const r = parseSchedule({ cron: '0 0 9 * * *', tz: 'Mars/Base' });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.errors[0]).toMatch(/IANA/);
  });

  it('always honours tz, including half-hour zones', () => {
    expect(fires(must({ cron: '0 0 9 * * *', tz: 'America/New_York' }), '2026-01-05T00:00:00Z', 1)).toEqual([
      '2026-01-05T14:00:00.000Z',
    ]);
    expect(fires(must({ cron: '0 0 9 * * *', tz: 'Asia/Kolkata' }), '2026-01-05T00:00:00Z', 1)).toEqual([
      '2026-01-05T03:30:00.000Z',
    ]);
  });

  it('uses the OR of day-of-month and day-of-week when both are restricted', () => {
    // 2026-06-01 is a Monday; 2026-06-08 the next one; 2026-07-01 a Wednesday.
    const got = fires(must({ cron: '0 0 0 1 * MON' }), '2026-05-31T12:00:00Z', 6);
    expect(got).toContain('2026-06-08T00:00:00.000Z');
    expect(got).toContain('2026-07-01T00:00:00.000Z');
  });

  describe('DST in America/New_York', () => {
    it('spring forward: 02:30 (skipped) fires once at 03:30 EDT that day', () => {
      const s = must({ cron: '0 30 2 * * *', tz: 'America/New_York' });
      expect(fires(s, '2026-03-07T12:00:00Z', 3)).toEqual([
        '2026-03-08T07:30:00.000Z', // 03:30 EDT
        '2026-03-09T06:30:00.000Z', // 02:30 EDT
        '2026-03-10T06:30:00.000Z',
      ]);
    });

    it('spring forward: an every-15-minutes job skips the missing hour without duplicates', () => {
      const s = must({ cron: '0 */15 * * * *', tz: 'America/New_York' });
      expect(fires(s, '2026-03-08T06:40:00Z', 4)).toEqual([
        '2026-03-08T06:45:00.000Z', // 01:45 EST
        '2026-03-08T07:00:00.000Z', // 03:00 EDT
        '2026-03-08T07:15:00.000Z',
        '2026-03-08T07:30:00.000Z',
      ]);
    });

    it('fall back: a fixed-hour job fires once, at the first 01:30', () => {
      const s = must({ cron: '0 30 1 * * *', tz: 'America/New_York' });
      expect(fires(s, '2026-11-01T00:00:00Z', 2)).toEqual([
        '2026-11-01T05:30:00.000Z',
        '2026-11-02T06:30:00.000Z',
      ]);
    });

    it('fall back: an hour-wildcard job fires in both repeated hours', () => {
      const s = must({ cron: '0 */30 * * * *', tz: 'America/New_York' });
      expect(fires(s, '2026-11-01T04:45:00Z', 5)).toEqual([
        '2026-11-01T05:00:00.000Z',
        '2026-11-01T05:30:00.000Z',
        '2026-11-01T06:00:00.000Z',
        '2026-11-01T06:30:00.000Z',
        '2026-11-01T07:00:00.000Z',
      ]);
    });
  });

  describe('DST in Australia/Lord_Howe (30-minute shift)', () => {
    it('spring forward: 02:15 (skipped) fires at 02:45 LHDT, the day is not skipped', () => {
      const s = must({ cron: '0 15 2 * * *', tz: 'Australia/Lord_Howe' });
      expect(fires(s, '2026-10-03T00:00:00Z', 2)).toEqual([
        '2026-10-03T15:45:00.000Z', // 2026-10-04 02:45 +11:00
        '2026-10-04T15:15:00.000Z', // 2026-10-05 02:15 +11:00
      ]);
    });

    it('fall back: a fixed-hour job fires once at the first 01:45', () => {
      const s = must({ cron: '0 45 1 * * *', tz: 'Australia/Lord_Howe' });
      expect(fires(s, '2026-04-04T00:00:00Z', 2)).toEqual([
        '2026-04-04T14:45:00.000Z', // 2026-04-05 01:45 +11:00
        '2026-04-05T15:15:00.000Z', // 2026-04-06 01:45 +10:30
      ]);
    });

    it('fall back: an hour-wildcard job fires in both repeated half hours', () => {
      const s = must({ cron: '0 */15 * * * *', tz: 'Australia/Lord_Howe' });
      expect(fires(s, '2026-04-04T14:20:00Z', 5)).toEqual([
        '2026-04-04T14:30:00.000Z', // 01:30 +11
        '2026-04-04T14:45:00.000Z', // 01:45 +11
        '2026-04-04T15:00:00.000Z', // 01:30 +10:30
        '2026-04-04T15:15:00.000Z', // 01:45 +10:30
        '2026-04-04T15:30:00.000Z', // 02:00 +10:30
      ]);
    });
  });

  it('its lease interval is the gap between its next two fire times', () => {
    const s = must({ cron: '0 0 */6 * * *' });
    expect(s.intervalMs(T('2026-01-01T01:00:00Z'))).toBe(6 * 3_600_000);
  });
});

describe('at', () => {
  it('accepts RFC 3339 with Z or an offset, rejects anything else', () => {
    expect(parseRfc3339('2026-05-01T09:00:00Z')).toBe(T('2026-05-01T09:00:00Z'));
    expect(parseRfc3339('2026-05-01T09:00:00+02:00')).toBe(T('2026-05-01T07:00:00Z'));
    for (const bad of ['2026-05-01', '2026-05-01T09:00:00', '2026-02-30T00:00:00Z', 'tomorrow'])
      expect(parseSchedule({ at: bad }).ok, bad).toBe(false);
  });

  it('fires once at its instant, never again, with no jitter and a 30 s interval', () => {
    const s = must({ at: '2026-05-01T09:00:00Z' });
    expect(s.firstSlot(T('2026-01-01T00:00:00Z'))).toBe(T('2026-05-01T09:00:00Z'));
    expect(s.slotAfter(T('2026-05-01T09:00:00Z'), T('2026-05-01T09:00:01Z'))).toBeNull();
    expect(jitterBound(s, 5000)).toBe(0);
    expect(s.intervalMs(0)).toBe(30_000);
  });

  it('a 30-day-away instant is further than one setTimeout can wait', () => {
    const now = T('2026-01-01T00:00:00Z');
    const s = must({ at: '2026-01-31T00:00:00Z' });
    expect(s.firstSlot(now)! - now).toBeGreaterThan(MAX_TIMEOUT_MS);
  });
});

describe('jitter, backoff, TTL', () => {
  it('jitter is uniform in [0, bound) and 0 gives exact times', () => {
    expect(withJitter(1000, 0, () => 0.99)).toBe(1000);
    expect(withJitter(1000, 500, () => 0)).toBe(1000);
    expect(withJitter(1000, 500, () => 0.999999)).toBe(1499);
    expect(jitterBound(must({ cron: '0 * * * * *', stagger_jitter_ms: 250 }), 5000)).toBe(250);
    expect(jitterBound(must({ every_secs: 60 }), 5000)).toBe(5000);
  });

  it('transient backoff doubles from 5 s and is capped by the interval', () => {
    expect([1, 2, 3, 4, 5].map((n) => transientBackoffMs(n, 60_000))).toEqual([
      5000, 10_000, 20_000, 40_000, 60_000,
    ]);
  });

  it('breaker backoff is 60 s doubling, capped at 30 min', () => {
    expect([1, 2, 3, 4, 5, 6, 7].map(breakerBackoffMs)).toEqual([
      60_000, 120_000, 240_000, 480_000, 960_000, 1_800_000, 1_800_000,
    ]);
  });

  it('lease TTL is max(30 s, factor x interval)', () => {
    expect(leaseTtlMs(must({ every_secs: 10 }), 2, 0)).toBe(30_000);
    expect(leaseTtlMs(must({ every_secs: 60 }), 2, 0)).toBe(120_000);
    expect(leaseTtlMs(must({ at: '2026-05-01T09:00:00Z' }), 2, 0)).toBe(60_000);
  });
});
