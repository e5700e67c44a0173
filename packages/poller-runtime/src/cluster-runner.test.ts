import { describe, expect, it, onTestFinished } from 'vitest';
import { sleep } from '@agent/timers';
import type { TickContext } from '@agent/poller-core';
import { clusterPerTest, everySecond, until } from '../test/cluster-helpers.js';
import { items, job, metricValue, scriptedKind } from '../test/helpers.js';
import type { ClaimingStore } from './claiming-store.js';

const node = clusterPerTest();

interface Tick {
  runner: string;
  job: string;
  /** The slot being ticked (the row's run time while the tick runs) and the database time at the start. */
  slot: number;
  dbNow: number;
}

/** A tick that records which runner ticked which slot of which job, on the database clock. */
const recording = (runner: string, store: ClaimingStore, log: Tick[]) => async (ctx: TickContext) => {
  const [dbNow, state] = await Promise.all([store.now(), store.load(ctx.job.id)]);
  log.push({ runner, job: ctx.job.id, slot: state!.nextRunAt!, dbNow });
  return { items: [] };
};

describe('cluster mode: runners sharing one job table', () => {
  it.each([{ names: ['A', 'B'] }, { names: ['A', 'B', 'C'] }])(
    'runners $names: each slot of each job ticks once, never early, and the jobs spread over them',
    async ({ names }) => {
      const log: Tick[] = [];
      const jobs = everySecond(12);
      const nodes = [];
      for (const name of names) {
        const n = await node({ holderId: `${name}#1`, jobs });
        n.kind.setDefault(recording(name, n.store, log));
        nodes.push(n);
      }
      await Promise.all(nodes.map((n) => n.runner.start()));
      await sleep(2600);
      await Promise.all(nodes.map((n) => n.runner.stop()));
      for (const { id } of jobs) {
        const ticks = log.filter((t) => t.job === id);
        const slots = ticks.map((t) => t.slot);
        expect(ticks.length, id).toBeGreaterThanOrEqual(2);
        expect(new Set(slots).size, `${id}: a slot ticked twice`).toBe(slots.length);
        for (const t of ticks)
          expect(t.dbNow, `${id}: ticked before its slot`).toBeGreaterThanOrEqual(t.slot);
      }
      for (const name of names) expect(log.filter((t) => t.runner === name).length, name).toBeGreaterThan(0);
      expect((await nodes[0]!.store.clusterJobs()).every((r) => r.holder === null)).toBe(true);
    },
  );

  it('a runner that dies mid-tick: breaking its leases hands the job to another runner at once, counted as a takeover', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const stuck = scriptedKind('fake', { backfillOnFirstTick: true });
    stuck.setDefault(async () => {
      await gate;
      return { items: items(1, 2) };
    });
    const jobs = [job('j', { schedule: { every_secs: 3600 } })];
    // A is killed mid-tick: it claims nothing more (a version no job has), while its stuck tick lives on.
    let aVersion = 1;
    const a = await node({ holderId: 'A#1', jobs, kind: stuck, version: () => aVersion });
    onTestFinished(release);
    await a.runner.start();
    await until(() => stuck.calls.length === 1);
    aVersion = 0;
    const healthy = scriptedKind('fake', { backfillOnFirstTick: true });
    healthy.setDefault({ items: items(1, 2) });
    const b = await node({ holderId: 'B#1', jobs, kind: healthy, pollMaxMs: 5000 });
    await b.runner.start();
    // The membership code found A's heartbeat stale.
    expect(await b.store.breakLeasesOf('A#1')).toEqual(['j']);
    const broke = Date.now();
    b.runner.wake();
    await until(() => b.dispatcher.deliveries.length === 2);
    expect(Date.now() - broke).toBeLessThan(1000);
    expect(await metricValue(b.metrics, 'poller_lease_takeovers_total', { job_id: 'j' })).toBe(1);
    // A wakes up: its lease is gone, it sends nothing and writes nothing.
    release();
    await a.runner.idle();
    await b.runner.idle();
    expect(a.dispatcher.deliveries).toHaveLength(0);
    expect(await b.store.deliveries('j')).toHaveLength(2);
  });

  it('a runner that cannot heartbeat claims nothing, and its in-flight tick sends nothing more', async () => {
    let trusted = true;
    const kind = scriptedKind('fake', { backfillOnFirstTick: true });
    kind.setDefault({ items: items(1, 2, 3) });
    const jobs = [job('j', { schedule: { every_secs: 1 }, config: { dispatch_delay_ms: 300 } })];
    const a = await node({ holderId: 'A#1', jobs, kind, trusted: () => trusted });
    await a.runner.start();
    await until(() => a.dispatcher.deliveries.length === 1);
    trusted = false;
    await sleep(1500);
    expect(a.dispatcher.deliveries).toHaveLength(1);
    expect(kind.calls).toHaveLength(1);
    expect(await metricValue(a.metrics, 'poller_claims_total', { result: 'untrusted' })).toBeGreaterThan(0);
    // Its lease went back: another daemon can take the job.
    expect((await a.store.clusterJob('j'))!.holder).toBeNull();
  });

  it('reload reconciles once per version: the first runner writes, the other finds it done', async () => {
    let version = 1;
    const a = await node({ holderId: 'A#1', jobs: everySecond(1, 60), version: () => version });
    const b = await node({ holderId: 'B#1', jobs: everySecond(1, 60), version: () => version });
    await a.runner.start();
    await b.runner.start();
    expect(a.logger.find('poller job table reconciled')).toHaveLength(1);
    expect(b.logger.find('poller job table already reconciled')).toHaveLength(1);
    version = 2;
    const { createTestSnapshot } = await import('./testing.js');
    const next = createTestSnapshot({ jobs: everySecond(2, 60), settings: { default_jitter_ms: 0 } });
    expect((await a.runner.reload(next)).add).toEqual(['j1']);
    expect((await b.runner.reload(next)).add).toEqual(['j1']);
    expect(b.logger.find('poller job table already reconciled')).toHaveLength(2);
    expect((await a.store.clusterJobs()).map((r) => [r.state.jobId, r.configVersion])).toEqual([
      ['j0', 1],
      ['j1', 2],
    ]);
  });

  it('operator commands act on the shared table: run takes the lease, list shows holders, reset revokes', async () => {
    const kind = scriptedKind();
    kind.setDefault({ items: items(1) });
    const jobs = [job('j', { schedule: { every_secs: 3600 } })];
    const a = await node({ holderId: 'A#1', jobs, kind });
    const b = await node({ holderId: 'B#1', jobs, kind });
    await a.runner.start();
    await b.runner.start();
    await until(() => kind.calls.length === 1);
    await a.runner.idle();
    await b.runner.idle();
    expect(await b.runner.run('j')).toMatchObject({ status: 'ok' });
    expect(kind.calls).toHaveLength(2);
    expect((await a.runner.list())[0]).toMatchObject({ id: 'j', holder: null, lease_expires_at: null });
    const before = (await a.store.clusterJob('j'))!.leaseEpoch;
    await a.runner.reset('j');
    expect((await a.store.clusterJob('j'))!.leaseEpoch).toBeGreaterThan(before);
    expect((await b.runner.show('j')).baselined).toBe(false);
    await b.runner.pause('j');
    expect((await a.runner.list())[0]!.paused).toBe(true);
    expect(await a.store.nextDueAt(1)).toBeNull();
  });

  it('while another daemon ticks a job, run reports busy and reset revokes that tick: it sends and writes nothing', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    onTestFinished(release);
    const stuck = scriptedKind('fake', { backfillOnFirstTick: true });
    stuck.setDefault(async () => {
      await gate;
      return { items: items(1, 2) };
    });
    const jobs = [job('j', { schedule: { every_secs: 3600 } })];
    const a = await node({ holderId: 'A#1', jobs, kind: stuck });
    await a.runner.start();
    await until(() => stuck.calls.length === 1);
    const b = await node({ holderId: 'B#1', jobs });
    await b.runner.start();
    expect(await b.runner.run('j')).toMatchObject({
      status: 'skipped',
      error: expect.stringContaining('busy: A#1'),
    });
    expect((await b.runner.list())[0]).toMatchObject({ holder: 'A#1', lease_expires_at: expect.any(String) });
    // Paused first, so that no daemon claims the job again before the end of the test.
    await b.runner.pause('j');
    await b.runner.reset('j');
    release();
    await a.runner.idle();
    expect(a.dispatcher.deliveries).toHaveLength(0);
    expect(await a.store.seenCount('j')).toBe(0);
    expect(await a.runner.show('j')).toMatchObject({
      baselined: false,
      paused: true,
      lease: { holder: null },
    });
  });
});
