// A renewal still waiting for the store when its session ends: its answer must not touch the tick that is
// over (abort it, or arm another renewal of a lease that is gone). With PostgreSQL a renewal takes a round
// trip, and the tick can end, and release the lease, within it.
import { describe, expect, it } from 'vitest';
import { createMemoryLogger } from '@agent/log';
import { Registry } from '@agent/metrics-text';
import { acquireLease, type LeaseSession } from './lease.js';
import { createPollerMetrics } from './metrics.js';
import type { StateStore } from './store.js';
import { createFakeClock, createMemoryStateStore, settle } from './testing.js';

const TTL = 120_000;

/** A memory store whose renewals wait until the test answers them. */
function heldRenewals() {
  const clock = createFakeClock();
  const real = createMemoryStateStore({ now: clock.now });
  const waiting: ((held: boolean) => void)[] = [];
  let renewals = 0;
  const store: StateStore = Object.assign(Object.create(null) as StateStore, real, {
    renewLease() {
      renewals++;
      return new Promise<boolean>((resolve) => waiting.push(resolve));
    },
  });
  const deps = {
    store,
    clock,
    metrics: createPollerMetrics(new Registry()),
    logger: createMemoryLogger(),
    holderId: 'holder-a',
  };
  return { clock, deps, waiting, renewals: () => renewals };
}

async function renewingSession(h: ReturnType<typeof heldRenewals>) {
  const attempt = await acquireLease(h.deps, 'j1', TTL, () => {});
  if (!('session' in attempt)) throw new Error('the lease was not granted');
  const tick = new AbortController();
  const session: LeaseSession = attempt.session;
  session.keepRenewing(tick);
  // A third of the TTL: the renewal is asked and waits for its answer.
  await h.clock.advance(TTL / 3);
  expect(h.renewals()).toBe(1);
  return { session, tick };
}

describe('a renewal answered after its session ended', () => {
  it.each([
    ['not held (the release came first)', false],
    ['held (the renewal came first)', true],
  ])('%s: the tick is not aborted and no renewal follows', async (_, held) => {
    const h = heldRenewals();
    const { session, tick } = await renewingSession(h);
    await session.end();
    h.waiting.shift()!(held);
    await settle();
    expect(tick.signal.aborted).toBe(false);
    expect(h.clock.pendingTimers()).toBe(0);
    await h.clock.advance(TTL);
    expect(h.renewals()).toBe(1);
  });

  it('answered after the releasing write, before the end: the tick is not aborted', async () => {
    const h = heldRenewals();
    const { session, tick } = await renewingSession(h);
    await session.writeLast({ state: { lastStatus: 'ok' } });
    h.waiting.shift()!(false);
    await settle();
    expect(tick.signal.aborted).toBe(false);
    expect(h.clock.pendingTimers()).toBe(0);
    await session.end();
  });

  it('while the session runs, a lost lease still aborts the tick and a held one is renewed again', async () => {
    const lost = heldRenewals();
    const a = await renewingSession(lost);
    lost.waiting.shift()!(false);
    await settle();
    expect(a.tick.signal.aborted).toBe(true);
    await a.session.end();

    const kept = heldRenewals();
    const b = await renewingSession(kept);
    kept.waiting.shift()!(true);
    await settle();
    expect(b.tick.signal.aborted).toBe(false);
    await kept.clock.advance(TTL / 3);
    expect(kept.renewals()).toBe(2);
    await b.session.end();
  });
});
