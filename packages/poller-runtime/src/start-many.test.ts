// Many jobs at once: a start writes their rows in one batch, and no more than `max_concurrent_ticks` scheduled
// ticks run at a time (the rest wait their turn, late but never skipped).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { TickContext } from '@agent/poller-core';
import { harness, job, metricValue, scriptedKind } from '../test/helpers.js';
import { createSqliteStateStore } from './sqlite.js';
import type { StateStore } from './store.js';

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.toReversed()) await c();
  cleanup = [];
});

/** A SQLite store that counts its calls by method. */
function countingSqlite() {
  const dir = mkdtempSync(join(tmpdir(), 'poller-start-'));
  const inner = createSqliteStateStore(join(dir, 'poller.db'));
  const calls = new Map<string, number>();
  const store = new Proxy(inner, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver) as unknown;
      if (typeof v !== 'function') return v;
      return (...args: unknown[]) => {
        calls.set(String(prop), (calls.get(String(prop)) ?? 0) + 1);
        return (v as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  }) as StateStore;
  cleanup.push(async () => {
    await inner.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { store, calls };
}

const jobs = (n: number) => Array.from({ length: n }, (_, i) => job(`j${i}`));

describe('starting many jobs', () => {
  it('writes the start-up rows of 500 jobs in one batch, with no per-job transaction', async () => {
    const { store, calls } = countingSqlite();
    const h = harness({ jobs: jobs(500), store });
    cleanup.push(() => h.service.stop());
    await h.service.start();
    expect(calls.get('commitStart')).toBe(1);
    expect(calls.get('init') ?? 0).toBe(0);
    expect(calls.get('commit') ?? 0).toBe(0);
    expect(calls.get('loadAll')).toBe(2);
    const rows = await store.loadAll();
    expect(rows).toHaveLength(500);
    expect(rows.every((r) => r.nextRunAt !== null && r.sourceKey !== null)).toBe(true);
    // A second start keeps what the first stored (the same run times: nothing starts over).
    await h.service.stop();
    const again = harness({ jobs: jobs(500), store, clock: h.clock });
    cleanup.push(() => again.service.stop());
    await again.service.start();
    expect((await store.loadAll()).map((r) => r.nextRunAt)).toEqual(rows.map((r) => r.nextRunAt));
  });

  it('runs at most max_concurrent_ticks scheduled ticks at once; every due job still ticks', async () => {
    const k = scriptedKind('fake');
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    k.setDefault(async (_ctx: TickContext) => {
      await gate;
      return { items: [] };
    });
    const h = harness({
      jobs: jobs(20),
      kinds: [k],
      settings: { default_jitter_ms: 0, breaker_threshold: 5, max_concurrent_ticks: 3 },
    });
    cleanup.push(() => h.service.stop());
    await h.service.start();
    await h.clock.advance(0);
    expect(k.calls).toHaveLength(3);
    expect(await metricValue(h.metrics, 'poller_ticks_waiting', {})).toBe(17);
    release();
    await h.clock.advance(0);
    await h.service.idle();
    await h.clock.advance(0);
    await h.service.idle();
    expect(k.calls).toHaveLength(20);
    expect(k.maxConcurrent()).toBe(3);
    expect(await metricValue(h.metrics, 'poller_ticks_waiting', {})).toBe(0);
  });
});
