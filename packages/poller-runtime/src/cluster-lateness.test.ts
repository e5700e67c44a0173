import { describe, expect, it } from 'vitest';
import type { Histogram, Registry } from 'prom-client';
import { sleep } from '@agent/timers';
import type { TickContext } from '@agent/poller-core';
import { clusterPerTest, everySecond, until } from '../test/cluster-helpers.js';
import { scriptedKind } from '../test/helpers.js';

const node = clusterPerTest();

/** The `poller_tick_lateness_seconds` histogram: its count, sum and cumulative bucket counts by bound. */
async function lateness(registry: Registry) {
  const metric = registry.getSingleMetric('poller_tick_lateness_seconds') as Histogram;
  const data = await metric.get();
  const named = (suffix: string) =>
    data.values.filter((v) => v.metricName === `poller_tick_lateness_seconds${suffix}`);
  const buckets = new Map(named('_bucket').map((v) => [Number(v.labels.le), v.value]));
  return { count: named('_count')[0]!.value, sum: named('_sum')[0]!.value, buckets };
}

describe('cluster mode: tick lateness', () => {
  it('observes each claimed tick once, its start minus its slot on the database clock', async () => {
    const probe = await node({ holderId: 'probe', jobs: [] });
    const kind = scriptedKind();
    const starts: { slot: number; dbNow: number }[] = [];
    kind.setDefault(async (ctx: TickContext) => {
      const [dbNow, state] = await Promise.all([probe.store.now(), probe.store.load(ctx.job.id)]);
      starts.push({ slot: state!.nextRunAt!, dbNow });
      await sleep(1200);
      return { items: [] };
    });
    // Two jobs due at once and room for one tick: the second starts after the first's 1.2 s.
    const a = await node({ holderId: 'A#1', jobs: everySecond(2, 60), kind, maxConcurrentTicks: 1 });
    await a.runner.start();
    await until(() => starts.length === 2);
    await a.runner.stop();

    const h = await lateness(a.metrics);
    expect(h.count).toBe(2);
    // The first on time (well under 1 s), the second late by the first tick's length.
    expect(h.buckets.get(1)).toBe(1);
    expect(h.sum).toBeGreaterThanOrEqual(1.2);
    // The kind read the database clock just after each start: the metric is not later than that.
    const seen = starts.reduce((s, x) => s + (x.dbNow - x.slot) / 1000, 0);
    expect(h.sum).toBeLessThanOrEqual(seen + 0.1);
  });
});
