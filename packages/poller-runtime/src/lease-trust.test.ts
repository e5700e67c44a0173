// The lease trust window and the fence check before each send, on the fake clock: a holder that could not
// renew (stopped, paused, partitioned) stops sending before its TTL runs out, whatever the wall clock says.
import { afterEach, describe, expect, it } from 'vitest';
import { HARNESS_START, harness, items, job, metricValue } from '../test/helpers.js';
import { leaseTrustMarginMs } from './schedule.js';
import type { StateStore } from './store.js';
import { createFakeClock, createMemoryStateStore, type FakeClock } from './testing.js';

const SEC = 1000;
// every_secs: 60 with the default lease_ttl_factor 2: TTL 120 s, margin 12 s, trust window 108 s.
const TTL = 120 * SEC;
const WINDOW = TTL - leaseTrustMarginMs(TTL);

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup) await c();
  cleanup = [];
});

/** A memory store whose renewals are scripted: `hang` never answers (the holder cannot renew). */
function renewalStore(clock: FakeClock, renewals: ('hang' | { answerAfterMs: number })[]) {
  const real = createMemoryStateStore({ now: clock.now });
  const store: StateStore = Object.assign(Object.create(null) as StateStore, real, {
    async renewLease(...args: Parameters<StateStore['renewLease']>) {
      const step = renewals.shift() ?? 'hang';
      if (step === 'hang') return new Promise<boolean>(() => {});
      const held = await real.renewLease(...args);
      await new Promise<void>((r) => clock.setTimer(() => r(), step.answerAfterMs));
      return held;
    },
  });
  return { store, real };
}

function setup(store: StateStore, clock: FakeClock, delayMs: number) {
  const h = harness({
    clock,
    store,
    jobs: [
      job('j1', {
        config: { dispatch_delay_ms: delayMs },
        failure_to: { channel: 'chat_b', to: 'ops' },
      }),
    ],
  });
  cleanup.push(() => h.service.stop());
  return h;
}

describe('lease trust window', () => {
  it('is max(1 s, 10 % of the TTL), at most half the TTL', () => {
    expect(leaseTrustMarginMs(30 * SEC)).toBe(3 * SEC);
    expect(leaseTrustMarginMs(TTL)).toBe(12 * SEC);
    expect(leaseTrustMarginMs(5 * SEC)).toBe(1 * SEC);
    expect(leaseTrustMarginMs(600)).toBe(300);
  });

  it('a holder that cannot renew stops before the send past its window: lease_lost, nothing stored, one warning', async () => {
    const clock = createFakeClock(HARNESS_START);
    const { store } = renewalStore(clock, []);
    // Items 60 s apart from the tick's start: 0 s, 60 s, then 120 s, past the 108 s window.
    const h = setup(store, clock, 60 * SEC);
    h.fake.push({ items: [] }, { items: items(1, 2, 3, 4) });
    await h.service.start();
    await h.clock.advance(0);
    const before = (await store.load('j1'))!;
    await h.clock.advance(60 * SEC);
    await h.clock.advance(2 * 60 * SEC);
    await h.service.idle();
    expect(h.dispatcher.texts()).toEqual(['New: item 1', 'New: item 2']);
    const after = (await store.load('j1'))!;
    expect(after.lastStatus).toBe(before.lastStatus);
    expect(after.consecutiveErrors).toBe(0);
    expect(after.cursor).toBe(before.cursor);
    expect(await metricValue(h.metrics, 'poller_ticks_total', { job_id: 'j1', status: 'transient' })).toBe(
      undefined,
    );
    const warnings = h.logger.records.filter((r) => r.level === 'warn');
    expect(warnings.map((w) => w.msg)).toEqual(['poller tick lost its lease; its writes are discarded']);
    expect(String(warnings[0]!.fields.reason)).toMatch(/trust window/);
    // Items 3 and 4 stay new: the next tick, with a fresh lease, delivers them.
    h.fake.push({ items: items(1, 2, 3, 4) });
    await h.clock.advance(10 * 60 * SEC);
    expect(h.dispatcher.texts()).toEqual(['New: item 1', 'New: item 2', 'New: item 3', 'New: item 4']);
  });

  it('a wall clock stepped back an hour does not extend the window (it runs on the monotonic clock)', async () => {
    const clock = createFakeClock(HARNESS_START);
    const { store } = renewalStore(clock, []);
    const h = setup(store, clock, 60 * SEC);
    h.fake.push({ items: [] }, { items: items(1, 2, 3) });
    await h.service.start();
    await h.clock.advance(0);
    await h.clock.advance(60 * SEC);
    expect(h.dispatcher.texts()).toEqual(['New: item 1']);
    clock.jumpWall(-3600 * SEC);
    await h.clock.advance(2 * 60 * SEC);
    await h.service.idle();
    expect(h.dispatcher.texts()).toEqual(['New: item 1', 'New: item 2']);
    expect(h.logger.find('poller tick lost its lease; its writes are discarded')).toHaveLength(1);
  });

  it('a renewal extends the window from when it was asked, not from its late answer', async () => {
    const clock = createFakeClock(HARNESS_START);
    // From the tick's start: the first renewal, asked at 40 s, answers at 100 s. Trusted until 40 s + 108 s =
    // 148 s, not 100 s + 108 s = 208 s.
    const { store } = renewalStore(clock, [{ answerAfterMs: 60 * SEC }]);
    const h = setup(store, clock, 75 * SEC);
    h.fake.push({ items: [] }, { items: items(1, 2, 3, 4) });
    await h.service.start();
    await h.clock.advance(0);
    await h.clock.advance(60 * SEC);
    await h.clock.advance(5 * 60 * SEC);
    await h.service.idle();
    // Sends at 0 s and 75 s; the one due at 150 s is past 148 s.
    expect(40 * SEC + WINDOW).toBe(148 * SEC);
    expect(h.dispatcher.texts()).toEqual(['New: item 1', 'New: item 2']);
  });

  it('renewals that answer keep a long tick trusted', async () => {
    const clock = createFakeClock(HARNESS_START);
    const h = setup(createMemoryStateStore({ now: clock.now }), clock, 60 * SEC);
    h.fake.push({ items: [] }, { items: items(1, 2, 3, 4, 5) });
    await h.service.start();
    await h.clock.advance(0);
    await h.clock.advance(60 * SEC);
    await h.clock.advance(5 * 60 * SEC);
    expect(h.dispatcher.texts()).toHaveLength(5);
    expect(h.logger.find('poller tick lost its lease; its writes are discarded')).toEqual([]);
  });
});

describe('fence check before each send', () => {
  it('a takeover inside the window (the lease broken and granted to another) stops the next send', async () => {
    const clock = createFakeClock(HARNESS_START);
    const { store, real } = renewalStore(clock, []);
    // Items 10 s apart, well inside the window and before the first renewal (40 s).
    const h = setup(store, clock, 10 * SEC);
    h.fake.push({ items: [] }, { items: items(1, 2, 3) });
    await h.service.start();
    await h.clock.advance(0);
    await h.clock.advance(60 * SEC);
    expect(h.dispatcher.texts()).toEqual(['New: item 1']);
    const mine = (await real.getLease('j1'))!;
    expect(await real.breakLease('j1', mine.holder!)).toBe(true);
    expect(await real.acquireLease('j1', 'holder-b', TTL)).toMatchObject({ holder: 'holder-b' });
    await h.clock.advance(30 * SEC);
    await h.service.idle();
    expect(h.dispatcher.texts()).toEqual(['New: item 1']);
    expect(h.logger.find('poller tick lost its lease; its writes are discarded')).toHaveLength(1);
    expect(await real.seenAmong('j1', ['2', '3'])).toEqual(new Set());
  });

  it('a manual run has no lease: neither the window nor another holder stops it', async () => {
    const clock = createFakeClock(HARNESS_START);
    const { store, real } = renewalStore(clock, []);
    const h = setup(store, clock, 200 * SEC);
    h.fake.push({ items: [] }, { items: items(1, 2, 3) });
    await h.service.start();
    await h.clock.advance(0);
    await real.acquireLease('j1', 'holder-b', TTL);
    const run = h.service.run('j1');
    await h.clock.advance(10 * 60 * SEC);
    expect(await run).toMatchObject({ status: 'ok', items_dispatched: 3 });
    expect(h.dispatcher.texts()).toHaveLength(3);
  });
});
