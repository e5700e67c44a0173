import { describe, expect, it } from 'vitest';
import { harnessPerTest, job } from '../test/helpers.js';
import { roundOf } from './scheduler.js';

const ROUND = 250;
const MIN = 60_000;
const setup = harnessPerTest();

describe('runner with scheduling rounds', () => {
  it('an every_secs slot off a round starts at that round, and the grid does not drift', async () => {
    const h = setup({ roundMs: ROUND });
    await h.service.start();
    await h.clock.advance(0);
    // The first run of a new job (no jitter here) is due at once.
    expect(h.fake.calls).toHaveLength(1);
    const slot = (await h.store.load('j1'))!.nextRunAt!;
    const round = roundOf(slot, ROUND);
    // j1's phase puts its slots off a round's end: the case under test.
    expect(round).toBeGreaterThan(slot);
    await h.clock.advance(slot - h.clock.now());
    expect(h.fake.calls).toHaveLength(1);
    await h.clock.advance(round - slot - 1);
    expect(h.fake.calls).toHaveLength(1);
    await h.clock.advance(1);
    expect(h.fake.calls).toHaveLength(2);
    expect(h.fake.calls[1]!.now().getTime()).toBe(round);
    // The next slot is on the job's grid, not a minute after the delayed start.
    expect((await h.store.load('j1'))!.nextRunAt).toBe(slot + MIN);
  });

  it('a cron run on a whole second without jitter is not delayed', async () => {
    const h = setup({
      roundMs: ROUND,
      jobs: [job('c1', { schedule: { cron: '0 * * * * *', stagger_jitter_ms: 0 } })],
    });
    await h.service.start();
    await h.clock.advance(0);
    const next = (await h.store.load('c1'))!.nextRunAt!;
    expect(next % 1000).toBe(0);
    await h.clock.advance(next - h.clock.now());
    expect(h.fake.calls).toHaveLength(1);
    expect(h.fake.calls[0]!.now().getTime()).toBe(next);
  });
});
