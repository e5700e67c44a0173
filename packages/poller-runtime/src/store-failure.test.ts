// A failing state store (disk full, I/O error) is seen: its ticks count as Transient errors of the job, the
// store's gauge drops, one error is logged per outage, and everything resumes, losing nothing, once it works.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HARNESS_START, harness, items, job, metricValue } from '../test/helpers.js';
import { createSqliteStateStore } from './sqlite.js';
import type { StateStore } from './store.js';
import { createFakeClock, type FakeClock } from './testing.js';

const SEC = 1000;
const MIN = 60 * SEC;
const WRITES = new Set([
  'init',
  'commit',
  'deleteJob',
  'acquireLease',
  'renewLease',
  'releaseLease',
  'revokeLease',
  'breakLease',
]);

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.toReversed()) await c();
  cleanup = [];
});

/** An error shaped like better-sqlite3's `SqliteError`. */
const sqliteError = (code: string, message: string) => Object.assign(new Error(message), { code });

/**
 * The real SQLite store, with faults on demand: `full` makes every write throw SQLITE_FULL (reads still
 * work, as on a full disk); `failReads` makes reads (a lease grant's state read among them) throw SQLITE_IOERR_READ. Calls are counted.
 */
function faultyStore(clock: FakeClock) {
  const dir = mkdtempSync(join(tmpdir(), 'poller-store-fault-'));
  const real = createSqliteStateStore(join(dir, 'state.db'), { now: clock.now });
  cleanup.push(async () => {
    await real.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const faults = { full: false, failReads: false, fullAfterDelivery: null as string | null };
  const calls: string[] = [];
  const store = new Proxy(real, {
    get(target, prop: string) {
      const v = Reflect.get(target, prop) as unknown;
      if (typeof v !== 'function' || prop === 'close') return v;
      return async (...args: unknown[]) => {
        calls.push(prop);
        if (WRITES.has(prop) && faults.full) throw sqliteError('SQLITE_FULL', 'database or disk is full');
        // A lease grant reads the job's state in its transaction: a failed read fails it too.
        if ((!WRITES.has(prop) || prop === 'acquireLease') && faults.failReads)
          throw sqliteError('SQLITE_IOERR_READ', 'disk I/O error');
        const r: unknown = await (v as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        // The disk fills up right after this item's delivery was committed.
        const ops = args[1] as { delivery?: { itemId: string } } | undefined;
        if (prop === 'commit' && ops?.delivery?.itemId === faults.fullAfterDelivery) faults.full = true;
        return r;
      };
    },
  }) as StateStore;
  return { store, real, faults, calls };
}

function setup(clock: FakeClock, store: StateStore) {
  const h = harness({
    clock,
    store,
    jobs: [job('j1', { failure_to: { channel: 'chat_b', to: 'ops' } })],
  });
  cleanup.push(() => h.service.stop());
  return h;
}

const ticks = (h: ReturnType<typeof setup>, status: string) =>
  metricValue(h.metrics, 'poller_ticks_total', { job_id: 'j1', status });

describe('state store failures', () => {
  it('a full disk at the lease grant: Transient ticks with backoff, breaker and alert; one error log; recovery delivers what came meanwhile', async () => {
    const clock = createFakeClock(HARNESS_START);
    const { store, real, faults, calls } = faultyStore(clock);
    const h = setup(clock, store);
    h.fake.push({ items: items('a') });
    await h.service.start();
    await h.clock.advance(0); // baseline
    expect(await metricValue(h.metrics, 'poller_store_healthy', {})).toBe(1);

    faults.full = true;
    await h.clock.advance(MIN); // 1st failure at the lease grant; the kind is not called
    expect(h.fake.calls).toHaveLength(1);
    expect(await ticks(h, 'transient')).toBe(1);
    expect(await metricValue(h.metrics, 'poller_consecutive_errors', { job_id: 'j1' })).toBe(1);
    expect(await metricValue(h.metrics, 'poller_store_healthy', {})).toBe(0);
    expect(
      await metricValue(h.metrics, 'poller_store_errors_total', { operation: 'acquireLease' }),
    ).toBeGreaterThanOrEqual(1);
    const [summary] = await h.service.list();
    expect(summary).toMatchObject({ last_status: 'transient', consecutive_errors: 1, breaker: 'closed' });
    expect(summary!.last_error).toMatch(/SQLITE_FULL/);

    // The job's own backoff, 5 s then 10 s: the third failure opens the breaker (threshold 3) and alerts;
    // the channel works though the disk is full.
    await h.clock.advance(5 * SEC);
    await h.clock.advance(10 * SEC);
    expect(await ticks(h, 'transient')).toBe(3);
    expect(await metricValue(h.metrics, 'poller_breaker_state', { job_id: 'j1' })).toBe(2);
    const alerts = h.dispatcher.deliveries.filter((d) => d.channel === 'chat_b');
    expect(alerts).toHaveLength(1);
    expect(alerts[0]!.text).toMatch(/opened its breaker after 3 consecutive transient errors.*SQLITE_FULL/);
    const alertAt = clock.now();

    // Open: due slots are skipped, the probe after 60 s fails, no second alert (the cooldown held in memory).
    await h.clock.advance(MIN);
    expect(await ticks(h, 'transient')).toBe(4);
    expect(h.dispatcher.deliveries.filter((d) => d.channel === 'chat_b')).toHaveLength(1);
    expect((await h.service.show('j1')).breaker_state).toBe(2);

    // Not a hot loop: once a slot (to count it skipped) and once a probe, not every 5 s (108 in 9 minutes).
    const grants = () => calls.filter((c) => c === 'acquireLease').length;
    const before = grants();
    await h.clock.advance(9 * MIN);
    expect(grants() - before).toBeLessThanOrEqual(12);
    expect(h.logger.records.filter((r) => r.level === 'error').map((r) => r.msg)).toEqual([
      'poller state store failing: ticks count as transient errors until a write goes through',
    ]);
    expect(h.logger.find('poller tick failed (transient)').every((r) => r.level === 'debug')).toBe(true);

    // Space again; new items came meanwhile. The next probe delivers them and closes the breaker.
    faults.full = false;
    h.fake.setDefault({ items: items('a', 'b', 'c') });
    await h.clock.advance(30 * MIN);
    expect(h.dispatcher.texts('chat_a')).toEqual(['New: item b', 'New: item c']);
    const st = (await real.load('j1'))!;
    expect(st).toMatchObject({ lastStatus: 'ok', consecutiveErrors: 0, breakerState: 0 });
    // The alert's cooldown, kept in memory, was stored with the first outcome written.
    expect(st.lastFailureAlertAt).toBe(alertAt);
    expect(await metricValue(h.metrics, 'poller_store_healthy', {})).toBe(1);
    expect(await metricValue(h.metrics, 'poller_breaker_state', { job_id: 'j1' })).toBe(0);
    const [recovered] = h.logger.find('poller state store recovered');
    expect(recovered!.level).toBe('warn');
    expect(recovered!.fields.ticks_failed).toBeGreaterThanOrEqual(4);
    // From the first failure (60 s) to the first write after the space came back (the next slot, 720 s).
    expect(recovered!.fields.outage_ms).toBe(11 * MIN);
    expect(await h.service.list()).toMatchObject([{ last_status: 'ok', consecutive_errors: 0 }]);
  });

  it('a commit that fails after a send: that item may repeat, the undelivered ones stay new, nothing is skipped', async () => {
    const clock = createFakeClock(HARNESS_START);
    const { store, faults } = faultyStore(clock);
    const h = setup(clock, store);
    h.fake.push({ items: [] });
    h.fake.setDefault({ items: items(1, 2, 3), cursor: 'c1' });
    await h.service.start();
    await h.clock.advance(0);
    faults.fullAfterDelivery = '1';
    await h.clock.advance(MIN);
    // Item 1 was committed, then the disk filled: item 2's commit fails after its send.
    expect(h.dispatcher.texts()).toEqual(['New: item 1', 'New: item 2']);
    expect(await ticks(h, 'transient')).toBe(1);
    expect(await h.service.list()).toMatchObject([{ last_status: 'transient', consecutive_errors: 1 }]);
    faults.fullAfterDelivery = null;
    faults.full = false;
    await h.clock.advance(5 * SEC);
    expect(h.dispatcher.texts()).toEqual(['New: item 1', 'New: item 2', 'New: item 2', 'New: item 3']);
    expect(await store.load('j1')).toMatchObject({ cursor: 'c1', lastStatus: 'ok', consecutiveErrors: 0 });
  });

  it('a failed state read at the start of a tick counts as Transient too', async () => {
    const clock = createFakeClock(HARNESS_START);
    const { store, faults } = faultyStore(clock);
    const h = setup(clock, store);
    await h.service.start();
    await h.clock.advance(0);
    faults.failReads = true;
    await h.clock.advance(MIN);
    expect(await ticks(h, 'transient')).toBe(1);
    expect(
      await metricValue(h.metrics, 'poller_store_errors_total', { operation: 'acquireLease' }),
    ).toBeGreaterThan(0);
    expect(await metricValue(h.metrics, 'poller_store_healthy', {})).toBe(0);
    faults.failReads = false;
    await h.clock.advance(5 * SEC);
    expect(await ticks(h, 'ok')).toBe(2);
    expect(await metricValue(h.metrics, 'poller_store_healthy', {})).toBe(1);
    expect(h.logger.find('poller scheduler error')).toEqual([]);
  });
});
