import { afterEach, describe, expect, it } from 'vitest';
import { harness, job } from '../test/helpers.js';
import type { TickContext } from '@agent/poller-core';
import { createFakeClock } from './testing.js';

const DAY = 24 * 3_600_000;

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup) await c();
  cleanup = [];
});

function setup(opts: Parameters<typeof harness>[0]) {
  const h = harness(opts);
  cleanup.push(() => h.service.stop());
  const aborted: unknown[] = [];
  const hang = (ctx: TickContext) =>
    new Promise<never>((_, reject) =>
      ctx.signal.addEventListener('abort', () => {
        aborted.push(ctx.signal.reason);
        reject(ctx.signal.reason as Error);
      }),
    );
  h.fake.setDefault(hang);
  return { ...h, aborted };
}

describe('tick deadline', () => {
  it('a monthly job: tick_timeout_secs (120 s by default), not 0.8 x its month-long lease TTL', async () => {
    const h = setup({
      jobs: [job('monthly', { schedule: { cron: '0 0 0 1 * *' } })],
      clock: createFakeClock('2026-01-01T00:00:00Z'),
    });
    await h.service.start();
    // The first slot is 2026-02-01; the lease TTL is 2 x the gap to March (56 days).
    await h.clock.advance(31 * DAY);
    expect(h.fake.calls).toHaveLength(1);
    await h.clock.advance(119_999);
    expect(h.aborted).toHaveLength(0);
    await h.clock.advance(1);
    await h.service.idle();
    const st = (await h.store.load('monthly'))!;
    expect(st).toMatchObject({ lastStatus: 'transient', consecutiveErrors: 1, breakerState: 0 });
    expect(st.lastError).toContain('deadline of 120000 ms');
    // A manual run has the same deadline.
    const run = h.service.run('monthly');
    await h.clock.advance(120_000);
    expect(await run).toMatchObject({ status: 'transient', error: expect.stringContaining('120000 ms') });
  });

  it('a lower tick_timeout_secs shortens a short job, whose deadline is otherwise 0.8 x its TTL', async () => {
    const h = setup({
      jobs: [job('j1')],
      settings: { default_jitter_ms: 0, breaker_threshold: 3, tick_timeout_secs: 10 },
    });
    await h.service.start();
    // every_secs 60: lease TTL 120 s, so 96 s without the setting.
    await h.clock.advance(9_999);
    expect(h.aborted).toHaveLength(0);
    await h.clock.advance(1);
    await h.service.idle();
    expect((await h.store.load('j1'))!.lastError).toContain('deadline of 10000 ms');
  });
});
