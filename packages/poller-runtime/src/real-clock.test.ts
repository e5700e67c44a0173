// Jobs whose interval, lease TTL or next slot is beyond what one Node timer can wait (2^31-1 ms, about
// 24.8 days), on the real clock: a timer that overflowed would fire after 1 ms.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMemoryLogger } from '@agent/log';
import { sleep } from '@agent/timers';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { items, job, scriptedKind } from '../test/helpers.js';
import { systemClock } from './clock.js';
import type { TickContext } from '@agent/poller-core';
import { createKindRegistry } from './registry.js';
import { createRunner } from './runner.js';
import type { Runner } from './runner-api.js';
import { createSqliteStateStore } from './sqlite.js';
import type { StateStore } from './store.js';
import {
  createMemoryStateStore,
  createMetricsRegistry,
  createTestDispatcher,
  createTestSnapshot,
  type TestJobSpec,
} from './testing.js';

const DAY = 24 * 3_600_000;

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.toReversed()) await c();
  cleanup = [];
});

/** Counts lease renewals; everything else goes to the real store. */
function countRenewals(store: StateStore) {
  let renewals = 0;
  const counted = new Proxy(store, {
    get(target, prop) {
      const v = Reflect.get(target, prop) as unknown;
      if (prop === 'renewLease')
        return (...args: Parameters<StateStore['renewLease']>) => {
          renewals++;
          return target.renewLease(...args);
        };
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return { store: counted, renewals: () => renewals };
}

/** A kind whose fetch takes real time, as a network fetch does, and honours its signal. */
function slowKind() {
  const k = scriptedKind();
  k.setDefault(async (ctx: TickContext) => {
    await sleep(30, ctx.signal);
    ctx.signal.throwIfAborted();
    return { items: items('a') };
  });
  return k;
}

function realService(spec: TestJobSpec, store: StateStore, kind = slowKind()): Runner {
  const service = createRunner({
    snapshot: createTestSnapshot({ settings: { default_jitter_ms: 0 }, jobs: [spec] }),
    registry: createKindRegistry([kind.kind]),
    store,
    dispatcher: createTestDispatcher(),
    metrics: createMetricsRegistry(),
    logger: createMemoryLogger(),
    clock: systemClock,
    random: () => 0,
    holderId: 'real-clock',
  });
  cleanup.push(() => service.stop());
  return service;
}

function sqliteStore(): StateStore {
  const dir = mkdtempSync(join(tmpdir(), 'poller-real-clock-'));
  const store = createSqliteStateStore(join(dir, 'poller.db'));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  cleanup.push(() => store.close());
  return store;
}

async function expectHealthy(store: StateStore, id: string) {
  expect(await store.load(id)).toMatchObject({
    lastStatus: 'ok',
    lastError: null,
    consecutiveErrors: 0,
    breakerState: 0,
  });
}

describe('long schedules on the real clock', () => {
  it('a yearly cron job: its manual run and a due scheduled tick succeed, and its breaker stays closed', async () => {
    const spec = job('yearly', { schedule: { cron: '0 0 0 1 1 *' } });
    const { store, renewals } = countRenewals(sqliteStore());
    const first = realService(spec, store);
    await first.start();
    expect((await store.load('yearly'))!.nextRunAt! - Date.now()).toBeGreaterThan(0);
    // Lease TTL 2 years: a fraction of it as the deadline would overflow one timer.
    expect(await first.run('yearly')).toMatchObject({ status: 'ok', items_seen: 1 });
    await expectHealthy(store, 'yearly');
    await first.stop();

    // Its slot comes due while the daemon is down; the next start ticks it at once.
    await store.commit('yearly', { state: { nextRunAt: Date.now() } });
    const kind = slowKind();
    const second = realService(spec, store, kind);
    await second.start();
    await vi.waitFor(() => expect(kind.calls).toHaveLength(1));
    await second.idle();
    await expectHealthy(store, 'yearly');
    const st = (await store.load('yearly'))!;
    expect(st.nextRunAt! - Date.now()).toBeGreaterThan(300 * DAY);
    expect(await store.getLease('yearly')).toMatchObject({ holder: null });
    // Renewal every TTL/3 (8 months): none during a 30 ms tick.
    expect(renewals()).toBe(0);
  });

  it('an every_secs job of 16 days: its first scheduled tick and a manual run succeed', async () => {
    const store = createMemoryStateStore();
    cleanup.push(() => store.close());
    const kind = slowKind();
    const service = realService(job('fortnightly', { schedule: { every_secs: 1_382_400 } }), store, kind);
    // every_secs jobs are due at once; the lease TTL is 32 days.
    await service.start();
    await vi.waitFor(() => expect(kind.calls).toHaveLength(1));
    await service.idle();
    await expectHealthy(store, 'fortnightly');
    // The next slot is on the job's own grid: at least half an interval away, at most one and a half.
    const next = (await store.load('fortnightly'))!.nextRunAt! - Date.now();
    expect(next).toBeGreaterThan(7.9 * DAY);
    expect(next).toBeLessThan(24.1 * DAY);
    expect(await service.run('fortnightly')).toMatchObject({ status: 'ok' });
    await expectHealthy(store, 'fortnightly');
  });

  it('a job whose next run is 30 days away is not ticked within 200 ms', async () => {
    const store = createMemoryStateStore();
    cleanup.push(() => store.close());
    const kind = slowKind();
    const at = new Date(Date.now() + 30 * DAY).toISOString();
    const warnings: Error[] = [];
    const onWarning = (w: Error) => void warnings.push(w);
    process.on('warning', onWarning);
    cleanup.push(() => void process.off('warning', onWarning));
    const service = realService(job('later', { schedule: { at } }), store, kind);
    await service.start();
    await sleep(200);
    await service.idle();
    expect(kind.calls).toHaveLength(0);
    expect(await store.load('later')).toMatchObject({ lastRunAt: null, nextRunAt: Date.parse(at) });
    expect(warnings.map((w) => w.name)).not.toContain('TimeoutOverflowWarning');
  });
});
