import { describe, expect, it } from 'vitest';
import { sleep } from '@agent/timers';
import type { TickContext } from '@agent/poller-core';
import { clusterPerTest, until } from '../test/cluster-helpers.js';
import { items, job, metricValue, scriptedKind } from '../test/helpers.js';
import { systemClock, type Clock } from './clock.js';
import type { DueHint } from './runner-api.js';

const node = clusterPerTest();

/**
 * The real time and short timers; timers of a second or more never fire. A claim loop on it (with a long
 * `pollMaxMs`) sleeps until something wakes it, while its looks a few milliseconds ahead still happen.
 */
const longTimersHeld: Clock = {
  ...systemClock,
  setTimer: (cb, ms) => (ms < 1000 ? systemClock.setTimer(cb, ms) : null),
  clearTimer: (h) => {
    if (h !== null) systemClock.clearTimer(h);
  },
};

/** A tick that waits until it is aborted (a stop, a pause). */
const untilAborted = (ctx: TickContext) =>
  new Promise<never>((_, reject) => {
    ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as Error), { once: true });
  });

describe('cluster mode: due hints between daemons', () => {
  it("a job resumed on another daemon: that daemon's hint wakes a sleeping runner, which claims it at once", async () => {
    const kind = scriptedKind();
    kind.setDefault({ items: items(1) });
    const jobs = [job('j', { schedule: { every_secs: 3600 }, paused_on_boot: true })];
    const a = await node({ holderId: 'A#1', jobs, kind, clock: longTimersHeld, pollMaxMs: 5000 });
    const hints: DueHint[] = [];
    let deliver = false;
    // B claims nothing (it stands for a daemon without free capacity); the hints it sends reach A or are lost.
    const b = await node({
      holderId: 'B#1',
      jobs,
      kind,
      trusted: () => false,
      announceDue: (hint) => {
        hints.push(hint);
        if (deliver) a.runner.wake(hint.dueAt ?? undefined);
      },
    });
    await a.runner.start();
    await b.runner.start();

    // A's first claim found nothing due, and its own sleep never ends: a lost hint leaves it asleep.
    const before = await a.store.now();
    await b.runner.resume('j');
    expect(hints).toEqual([{ jobIds: ['j'], dueAt: expect.any(Number) }]);
    // Due now (no jitter), on B's database-corrected clock.
    expect(Math.abs(hints[0]!.dueAt! - before)).toBeLessThan(1000);
    await sleep(300);
    expect(kind.calls).toHaveLength(0);

    // The same command with the hint delivered: A claims the job without its sleep ending.
    deliver = true;
    await b.runner.pause('j');
    await b.runner.resume('j');
    await until(() => kind.calls.length === 1);
    await a.runner.idle();
    expect((await a.store.clusterJob('j'))!.state.baselined).toBe(true);
  });

  it('a hint for a later due time makes the runner look by then, not now', async () => {
    const kind = scriptedKind();
    const jobs = [job('j', { schedule: { every_secs: 3600 } })];
    const a = await node({ holderId: 'A#1', jobs, kind, clock: longTimersHeld, pollMaxMs: 5000 });
    await a.runner.start();
    await until(() => kind.calls.length === 1);
    await a.runner.idle();
    const looks = async () =>
      ((await metricValue(a.metrics, 'poller_claims_total', { result: 'empty' })) ?? 0) +
      ((await metricValue(a.metrics, 'poller_claims_total', { result: 'claimed' })) ?? 0);
    const before = await looks();
    // Due in an hour: the loop arms its timer for then (held here) and claims nothing now.
    a.runner.wake((await a.store.now()) + 3_600_000);
    await sleep(300);
    expect(await looks()).toBe(before);
    // Due already: it claims at once.
    a.runner.wake((await a.store.now()) - 1);
    await until(async () => (await looks()) === before + 1);
  });

  it('announces what it makes due: a reconcile that adds, resume, reset, the end of a manual run, jobs handed back at stop', async () => {
    const kind = scriptedKind();
    kind.setDefault({ items: items(1) });
    const hints: DueHint[] = [];
    const jobs = [
      job('j', { schedule: { every_secs: 3600 } }),
      job('slow', { schedule: { every_secs: 3600 }, paused_on_boot: true }),
    ];
    const a = await node({ holderId: 'A#1', jobs, kind, announceDue: (h) => hints.push(h) });
    await a.runner.start();
    expect(hints.splice(0)).toEqual([{ jobIds: ['j', 'slow'], dueAt: null }]);
    await until(() => kind.calls.length === 1);
    await a.runner.idle();
    const next = (await a.store.clusterJob('j'))!.state.nextRunAt!;

    // A manual run leaves the schedule: the job is due at its run time again once the lease is back.
    expect(await a.runner.run('j')).toMatchObject({ status: 'ok' });
    expect(hints.splice(0)).toEqual([{ jobIds: ['j'], dueAt: next }]);
    await a.runner.reset('j');
    expect(hints.splice(0)).toEqual([{ jobIds: ['j'], dueAt: next }]);
    // Paused: nothing is due, nothing is announced.
    await a.runner.pause('j');
    await a.runner.reset('j');
    expect(hints).toEqual([]);

    kind.setDefault(untilAborted);
    await a.runner.resume('slow');
    expect(hints.splice(0)).toEqual([{ jobIds: ['slow'], dueAt: expect.any(Number) }]);
    await until(() => kind.calls.length === 3);
    await a.runner.stop();
    expect(hints).toEqual([{ jobIds: ['slow'], dueAt: null }]);
    expect((await a.store.clusterJob('slow'))!.holder).toBeNull();
  });
});
