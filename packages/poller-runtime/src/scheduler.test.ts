import { afterEach, describe, expect, it } from 'vitest';
import { harness, job } from '../test/helpers.js';
import { createFakeClock, createMemoryStateStore } from './testing.js';

const MIN = 60_000;
let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup) await c();
  cleanup = [];
});

describe('scheduler in the service', () => {
  it('restart continuity: the persisted next_run_at is used, and a long outage gives ONE catch-up tick', async () => {
    const clock = createFakeClock();
    const store = createMemoryStateStore({ now: clock.now });
    const a = harness({ clock, store, jobs: [job('j1')] });
    await a.service.start();
    await a.clock.advance(0);
    await a.clock.advance(MIN);
    expect(a.fake.calls).toHaveLength(2);
    const next = (await store.load('j1'))!.nextRunAt!;
    await a.service.stop();
    // Restart before the slot: the same slot is kept.
    const b = harness({ clock, store, jobs: [job('j1')] });
    await b.service.start();
    expect((await store.load('j1'))!.nextRunAt).toBe(next);
    await b.service.stop();
    // Down for 10 intervals.
    await clock.advance(10 * MIN);
    const c = harness({ clock, store, jobs: [job('j1')] });
    await c.service.start();
    await c.clock.advance(0);
    expect(c.fake.calls).toHaveLength(1);
    const after = (await store.load('j1'))!;
    expect(after.nextRunAt).toBeGreaterThan(clock.now());
    expect(after.nextRunAt! - clock.now()).toBeLessThanOrEqual(MIN);
    await c.clock.advance(MIN - 1);
    await c.service.stop();
  });

  it('an `at` job 30 days away does not fire early, fires once, stays paused across restarts', async () => {
    const clock = createFakeClock('2026-01-01T00:00:00Z');
    const store = createMemoryStateStore({ now: clock.now });
    const spec = job('once', { schedule: { at: '2026-01-31T00:00:00Z' } });
    const a = harness({ clock, store, jobs: [spec] });
    a.fake.setDefault({ items: [] });
    await a.service.start();
    await a.clock.advance(29 * 24 * 60 * MIN);
    expect(a.fake.calls).toHaveLength(0);
    await a.clock.advance(24 * 60 * MIN);
    expect(a.fake.calls).toHaveLength(1);
    expect((await store.load('once'))!).toMatchObject({
      paused: true,
      atFired: expect.stringMatching(/^at:/),
    });
    await a.service.stop();
    const b = harness({ clock, store, jobs: [spec] });
    await b.service.start();
    await b.clock.advance(60 * MIN);
    expect(b.fake.calls).toHaveLength(0);
    await b.service.stop();
    // A changed `at` re-arms the job.
    const c = harness({ clock, store, jobs: [job('once', { schedule: { at: '2026-02-01T12:00:00Z' } })] });
    await c.service.start();
    expect((await store.load('once'))!.paused).toBe(false);
    await c.clock.advance(2 * 24 * 60 * MIN);
    expect(c.fake.calls).toHaveLength(1);
    await c.service.stop();
  });

  it('an `at` missed while down fires once at boot', async () => {
    const clock = createFakeClock('2026-03-01T00:00:00Z');
    const h = harness({ clock, jobs: [job('once', { schedule: { at: '2026-02-01T00:00:00Z' } })] });
    await h.service.start();
    await h.clock.advance(0);
    await h.clock.advance(60 * MIN);
    expect(h.fake.calls).toHaveLength(1);
    await h.service.stop();
  });

  it('cron jobs run at their fire times in their tz', async () => {
    const clock = createFakeClock('2026-01-05T00:00:00Z');
    const h = harness({
      clock,
      jobs: [job('c1', { schedule: { cron: '0 0 9 * * *', tz: 'America/New_York' } })],
    });
    await h.service.start();
    expect((await h.store.load('c1'))!.nextRunAt).toBe(Date.parse('2026-01-05T14:00:00Z'));
    await h.clock.advance(14 * 60 * MIN);
    expect(h.fake.calls).toHaveLength(1);
    expect((await h.store.load('c1'))!.nextRunAt).toBe(Date.parse('2026-01-06T14:00:00Z'));
    await h.service.stop();
  });
});
