import { describe, expect, it } from 'vitest';
import { harness, harnessPerTest, items, job, metricValue } from '../test/helpers.js';
import { TransientError } from '@agent/poller-core';
import { createFakeClock, createMemoryStateStore } from './testing.js';
import type { CommitOps } from './store.js';

const MIN = 60_000;
const setup = harnessPerTest();

/** Counts the store's write calls (a commit that also releases the lease is one write). */
function countingStore(clock: ReturnType<typeof createFakeClock>) {
  const real = createMemoryStateStore({ now: clock.now });
  const writes: string[] = [];
  const store = new Proxy(real, {
    get(target, prop: string) {
      const v = Reflect.get(target, prop) as unknown;
      if (typeof v !== 'function') return v;
      return (...args: unknown[]) => {
        if (['init', 'commit', 'acquireLease', 'renewLease', 'releaseLease', 'revokeLease'].includes(prop))
          writes.push(prop === 'commit' && (args[1] as CommitOps).releaseLease ? 'commit+release' : prop);
        return (v as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store, writes };
}

describe('transactions per tick', () => {
  it('an ok scheduled tick makes two writes: the lease grant and one commit that releases it', async () => {
    const clock = createFakeClock();
    const { store, writes } = countingStore(clock);
    const h = harness({ clock, store, jobs: [job('j1')] });
    h.fake.push({ items: items('a') }, { items: items('a') });
    await h.service.start();
    await h.clock.advance(0);
    writes.length = 0;
    await h.clock.advance(MIN);
    await h.service.idle();
    expect(h.fake.calls).toHaveLength(2);
    expect(writes).toEqual(['acquireLease', 'commit+release']);
    expect(await store.getLease('j1')).toMatchObject({ holder: null });
    await h.service.stop();
  });

  it('a tick that opens the breaker releases the lease only after the alert stamped its cooldown', async () => {
    const clock = createFakeClock();
    const { store, writes } = countingStore(clock);
    const h = harness({
      clock,
      store,
      settings: { breaker_threshold: 1 },
      jobs: [job('j1', { failure_to: { channel: 'chat_b', to: 'ops' } })],
    });
    h.fake.push(new TransientError('down'));
    await h.service.start();
    await h.clock.advance(0);
    await h.service.idle();
    expect(h.dispatcher.texts()).toEqual([expect.stringContaining('opened its breaker')]);
    expect(writes.slice(-4)).toEqual(['acquireLease', 'commit', 'commit', 'releaseLease']);
    expect((await store.load('j1'))!.lastFailureAlertAt).toBe(clock.now());
    expect(await store.getLease('j1')).toMatchObject({ holder: null });
    await h.service.stop();
  });
});

describe('dead lease holders', () => {
  it('at start, a lease held by a dead holder is taken over at once, counted and logged', async () => {
    const h = setup({ jobs: [job('j1', { schedule: { cron: '0 0 9 * * *' } })] });
    // A daily job whose previous daemon died mid-tick: its lease would block the job for two days.
    await h.store.init('j1');
    await h.store.acquireLease('j1', 'host:4242:99:dead', 2 * 86_400_000);
    const gone: string[] = [];
    const h2 = setup({
      jobs: [job('j1', { schedule: { cron: '0 0 9 * * *' } })],
      store: h.store,
      clock: h.clock,
      holderGone: (holder) => (gone.push(holder), holder.endsWith(':dead')),
    });
    await h2.service.start();
    expect(gone).toEqual(['host:4242:99:dead']);
    expect(await h.store.getLease('j1')).toMatchObject({ holder: null, epoch: 2 });
    expect(await metricValue(h2.metrics, 'poller_lease_takeovers_total', { job_id: 'j1' })).toBe(1);
    expect(h2.logger.find('poller lease taken over: its holder process is gone')).toHaveLength(1);
  });

  it('leaves a live holder, an expired lease and our own lease alone', async () => {
    const h = setup({ jobs: [job('a'), job('b'), job('c')] });
    await h.store.acquireLease('a', 'host:1:1:alive', 600_000);
    await h.store.acquireLease('b', 'host:2:2:dead', 1);
    await h.clock.advance(10);
    await h.store.acquireLease('c', 'holder-b', 600_000);
    const h2 = setup({
      jobs: [job('a'), job('b'), job('c')],
      store: h.store,
      clock: h.clock,
      holderId: 'holder-b',
      holderGone: (holder) => holder.endsWith(':dead'),
    });
    await h2.service.start();
    expect(await h.store.getLease('a')).toMatchObject({ holder: 'host:1:1:alive' });
    expect(await metricValue(h2.metrics, 'poller_lease_takeovers_total', { job_id: 'b' })).toBeUndefined();
    expect(h2.logger.find('poller lease taken over: its holder process is gone')).toHaveLength(0);
  });
});
