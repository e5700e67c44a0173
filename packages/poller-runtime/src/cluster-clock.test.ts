import { describe, expect, it } from 'vitest';
import { sleep } from '@agent/timers';
import type { TickContext } from '@agent/poller-core';
import { clusterPerTest, everySecond, until } from '../test/cluster-helpers.js';
import { metricValue, scriptedKind } from '../test/helpers.js';
import type { ClaimingStore } from './claiming-store.js';
import { systemClock, type Clock } from './clock.js';

const node = clusterPerTest();

/** A kind that records, for each tick, its slot (the row's run time during the tick) and the database time. */
function dbTimedKind(store: ClaimingStore) {
  const starts: { slot: number; dbNow: number }[] = [];
  const kind = scriptedKind();
  kind.setDefault(async (ctx: TickContext) => {
    const [dbNow, state] = await Promise.all([store.now(), store.load(ctx.job.id)]);
    starts.push({ slot: state!.nextRunAt!, dbNow });
    return { items: [] };
  });
  return { kind, starts };
}

/** The host clock set `offsetMs` off, as a badly synchronised host's would be; timers are real. */
const skewedClock = (offsetMs: number): Clock => ({ ...systemClock, now: () => Date.now() + offsetMs });

describe('cluster mode: the claim loop on the real clock', () => {
  it('sleeps until the next due time (not pollMaxMs, and without spinning), and ticks each slot on time', async () => {
    const probe = await node({ holderId: 'probe', jobs: [] });
    const { kind, starts } = dbTimedKind(probe.store);
    const a = await node({ holderId: 'A#1', jobs: everySecond(1), kind, pollMaxMs: 5000 });
    await a.runner.start();
    await sleep(2400);
    await a.runner.stop();
    // Waiting pollMaxMs (5 s) would tick once; slots at 0, 1 and 2 s tick each, never early, soon after.
    expect(starts.length).toBeGreaterThanOrEqual(2);
    for (const { slot, dbNow } of starts) {
      expect(dbNow).toBeGreaterThanOrEqual(slot);
      expect(dbNow - slot).toBeLessThan(1000);
    }
    // One claim per slot and a look after each tick, not a poll every few milliseconds.
    const empty = (await metricValue(a.metrics, 'poller_claims_total', { result: 'empty' })) ?? 0;
    expect(empty).toBeLessThanOrEqual(6);
    expect(await metricValue(a.metrics, 'poller_claims_total', { result: 'claimed' })).toBe(starts.length);
  });

  it.each([90_000, -90_000])(
    'a host clock %i ms off computes run times on the database clock: never early, never stalled',
    async (offset) => {
      const probe = await node({ holderId: 'probe', jobs: [] });
      const { kind, starts } = dbTimedKind(probe.store);
      const a = await node({ holderId: 'A#1', jobs: everySecond(1), kind, clock: skewedClock(offset) });
      await a.runner.start();
      await sleep(2400);
      await a.runner.stop();
      // On the host clock alone: +90 s would tick once, -90 s would tick back to back.
      expect(starts.length).toBeGreaterThanOrEqual(2);
      expect(starts.length).toBeLessThanOrEqual(3);
      for (const { slot, dbNow } of starts) expect(dbNow).toBeGreaterThanOrEqual(slot);
      const skew = (await metricValue(a.metrics, 'poller_clock_skew_seconds', {}))!;
      expect(Math.abs(skew + offset / 1000)).toBeLessThan(1);
    },
  );
});

describe('cluster mode: per-job state gauges', () => {
  it('are exported only while the runner is told it leads, read from the table, and never by its ticks', async () => {
    const kind = scriptedKind();
    kind.setDefault(new (await import('@agent/poller-core')).TransientError('down'));
    const a = await node({ holderId: 'A#1', jobs: everySecond(1, 60), kind });
    await a.runner.start();
    await until(() => kind.calls.length === 1);
    await a.runner.idle();
    expect(await metricValue(a.metrics, 'poller_consecutive_errors', { job_id: 'j0' })).toBeUndefined();
    a.runner.exportJobGauges(true);
    await until(
      async () => (await metricValue(a.metrics, 'poller_consecutive_errors', { job_id: 'j0' })) === 1,
    );
    expect(await metricValue(a.metrics, 'poller_breaker_state', { job_id: 'j0' })).toBe(0);
    a.runner.exportJobGauges(false);
    expect(await metricValue(a.metrics, 'poller_consecutive_errors', { job_id: 'j0' })).toBeUndefined();
  });
});
