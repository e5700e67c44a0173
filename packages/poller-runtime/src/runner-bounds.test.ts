// The work of one tick is bounded: items considered, seen-set queries and the ids kept at eviction.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { harness, items, job, metricValue } from '../test/helpers.js';
import { DEFAULT_MAX_ITEMS_CONSIDERED } from '@agent/poller-core';
import { createSqliteStateStore } from './sqlite.js';
import type { CommitOps, StateStore } from './store.js';

const MIN = 60_000;
let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.toReversed()) await c();
  cleanup = [];
});

const range = (from: number, to: number): string[] =>
  Array.from({ length: to - from }, (_, i) => `id${from + i}`);

/** A real SQLite store that also records what every commit asked for. */
function recordingSqlite(): { store: StateStore; commits: CommitOps[]; seenQueries: number[] } {
  const dir = mkdtempSync(join(tmpdir(), 'runner-bounds-'));
  const real = createSqliteStateStore(join(dir, 'state.db'));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  const commits: CommitOps[] = [];
  const seenQueries: number[] = [];
  const store: StateStore = {
    ...real,
    commit: (jobId, ops, fence) => {
      commits.push(ops);
      return real.commit(jobId, ops, fence);
    },
    seenAmong: (jobId, ids) => {
      seenQueries.push(ids.length);
      return real.seenAmong(jobId, ids);
    },
    close: () => real.close(),
  };
  return { store, commits, seenQueries };
}

describe('runner: bounded work per tick', () => {
  it('considers only the newest max_items_considered items, with one warning that is then counted', async () => {
    const h = harness({ jobs: [job('j1', { config: { max_items_considered: 10 } })] });
    cleanup.push(() => h.service.stop());
    h.fake.push(
      { items: items(...range(0, 25)) },
      { items: items(...range(0, 26)) },
      { items: items(...range(0, 27)) },
    );
    await h.service.start();
    await h.clock.advance(0);
    // The baseline holds the newest ten (the end of the oldest-first list).
    expect(h.store.seenIds('j1')).toEqual(range(15, 25));
    await h.clock.advance(MIN);
    await h.clock.advance(MIN);
    expect(h.dispatcher.deliveries.map((d) => d.itemId)).toEqual(['id25', 'id26']);
    const warned = h.logger.find('poller tick considered only the newest items of a large fetch');
    expect(warned).toHaveLength(1);
    expect(warned[0]!.fields).toMatchObject({ considered: 10, dropped: 15 });
    expect(await metricValue(h.metrics, 'poller_kind_warnings_total', { job_id: 'j1' })).toBe(3);
  });

  it(`keeps ${DEFAULT_MAX_ITEMS_CONSIDERED} items by default and checks them against the seen set in chunks`, async () => {
    const rec = recordingSqlite();
    const h = harness({ jobs: [job('j1')], store: rec.store });
    cleanup.push(() => h.service.stop());
    h.fake.push({ items: items(...range(0, 30_000)) }, { items: items(...range(0, 30_003)) });
    await h.service.start();
    await h.clock.advance(0);
    expect(await rec.store.seenCount('j1')).toBe(DEFAULT_MAX_ITEMS_CONSIDERED);
    expect(Math.max(...rec.seenQueries)).toBeLessThanOrEqual(1000);
    // The baseline went in several short transactions; only the last one writes the state.
    const baseline = rec.commits.filter((c) => c.addSeen?.length);
    expect(baseline.length).toBeGreaterThan(1);
    expect(Math.max(...baseline.map((c) => c.addSeen!.length))).toBeLessThanOrEqual(1000);
    expect(baseline.filter((c) => c.state)).toHaveLength(1);
    await h.clock.advance(MIN);
    expect(h.dispatcher.deliveries.map((d) => d.itemId)).toEqual(['id30000', 'id30001', 'id30002']);
  });

  it('per-item commits carry no keep list; the last write of the tick keeps the latest ids once', async () => {
    const rec = recordingSqlite();
    const h = harness({ jobs: [job('j1')], store: rec.store });
    cleanup.push(() => h.service.stop());
    // Every tick lists 600 ids, 20 of them new: the seen set (limit 2 x 600) fills up and is evicted.
    for (let t = 0; t < 60; t++) h.fake.push({ items: items(...range(t * 20, t * 20 + 600)) });
    await h.service.start();
    await h.clock.advance(0);
    rec.commits.length = 0;
    for (let t = 1; t < 60; t++) await h.clock.advance(MIN);
    const deliveries = rec.commits.filter((c) => c.delivery);
    expect(deliveries).toHaveLength(59 * 20);
    expect(deliveries.every((c) => c.keepSeen === undefined && c.seenLimit === undefined)).toBe(true);
    const keeping = rec.commits.filter((c) => c.keepSeen !== undefined);
    expect(keeping).toHaveLength(59);
    expect(keeping.every((c) => c.state !== undefined && c.seenLimit === 1200)).toBe(true);
    // Bounded, and every id of the latest result is still there.
    expect(await rec.store.seenCount('j1')).toBe(1200);
    const latest = range(59 * 20, 59 * 20 + 600);
    expect((await rec.store.seenAmong('j1', latest)).size).toBe(600);
    expect(h.dispatcher.deliveries).toHaveLength(59 * 20);
  });
});
