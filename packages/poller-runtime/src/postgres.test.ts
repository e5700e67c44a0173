import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sleep } from '@agent/timers';
import { scratchSchema, type ScratchSchema } from '@agent/pg/testing';
import type { ClaimingStore, ReconcileEntry } from './claiming-store.js';
import { createPostgresStateStore } from './postgres.js';
import { emptyJobState, type JobStatePatch } from './store.js';

let scratch: ScratchSchema;
let store: ClaimingStore;
beforeEach(async () => {
  scratch = await scratchSchema('pr');
  store = await createPostgresStateStore({ pool: scratch.pool, schema: scratch.schema });
});
afterEach(() => scratch.drop());

/** A reconcile entry whose first run is `nextRunAt` (default: due now). */
function entry(id: string, over: Partial<ReconcileEntry> & { nextRunAt?: number } = {}): ReconcileEntry {
  const nextRunAt = over.nextRunAt ?? Date.now() - 60_000;
  return {
    id,
    defHash: `h-${id}`,
    leaseTtlMs: 30_000,
    pausedOnBoot: false,
    ops: (_current, applyPausedOnBoot) => ({
      state: {
        sourceKey: `src-${id}`,
        nextRunAt,
        scheduleKey: 'every_secs:60',
        ...(applyPausedOnBoot && over.pausedOnBoot ? { paused: true } : {}),
      },
    }),
    ...over,
  };
}

describe('PostgreSQL store: claims', () => {
  it('migrates once per schema: a second store on the same schema finds the tables', async () => {
    const again = await createPostgresStateStore({ pool: scratch.openPool(), schema: scratch.schema });
    expect(await again.loadAll()).toEqual([]);
    const { rows } = await scratch.pool.query(
      `SELECT version FROM ${scratch.schema}.schema_migrations WHERE component = 'pollers'`,
    );
    expect(rows).toEqual([{ version: 1 }]);
  });

  it('claims only due, unpaused jobs of its version, once, and only after the table was reconciled', async () => {
    const entries = [entry('a'), entry('b'), entry('later', { nextRunAt: Date.now() + 600_000 })];
    expect((await store.claimDue('A', { limit: 10, configVersion: 1 })).claims).toEqual([]);
    await store.reconcile([...entries, entry('p', { pausedOnBoot: true })], 1);
    const first = await store.claimDue('A', { limit: 10, configVersion: 1 });
    expect(first.claims.map((c) => c.jobId).sort()).toEqual(['a', 'b']);
    expect(first.claims[0]).toMatchObject({ grant: { holder: 'A', takeover: false }, leaseTtlMs: 30_000 });
    expect(first.claims[0]!.state).toMatchObject({ sourceKey: expect.stringMatching(/^src-/) });
    expect(Math.abs(first.dbNow - Date.now())).toBeLessThan(5_000);
    expect(first.nextDueAt).toBeGreaterThan(Date.now() + 500_000);
    expect((await store.claimDue('B', { limit: 10, configVersion: 1 })).claims).toEqual([]);
    const row = (await store.clusterJob('a'))!;
    expect(row).toMatchObject({ holder: 'A', configVersion: 1 });
    expect(row.leaseExpiresAt).toBeGreaterThan(first.dbNow + 29_000);
  });

  it('a daemon on an older configuration version claims only jobs that version defined', async () => {
    await store.reconcile([entry('old')], 1);
    await store.reconcile([entry('old'), entry('new')], 2);
    expect(
      (await store.claimDue('old-daemon', { limit: 10, configVersion: 1 })).claims.map((c) => c.jobId),
    ).toEqual(['old']);
    expect(
      (await store.claimDue('new-daemon', { limit: 10, configVersion: 2 })).claims.map((c) => c.jobId),
    ).toEqual(['new']);
  });

  it('SKIP LOCKED: two daemons claiming at once never get the same job', async () => {
    const other = await createPostgresStateStore({ pool: scratch.openPool(), schema: scratch.schema });
    await store.reconcile(
      Array.from({ length: 40 }, (_, i) => entry(`j${i}`)),
      1,
    );
    const [x, y] = await Promise.all([
      store.claimDue('A', { limit: 25, configVersion: 1 }),
      other.claimDue('B', { limit: 25, configVersion: 1 }),
    ]);
    const ids = [...x.claims, ...y.claims].map((c) => c.jobId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toHaveLength(40);
  });

  it('a broken lease (dead holder) is due at once and its next claim is a takeover with a new epoch', async () => {
    await store.reconcile([entry('j')], 1);
    const [a] = (await store.claimDue('dead#1', { limit: 1, configVersion: 1 })).claims;
    expect(await store.breakLeasesOf('live#2')).toEqual([]);
    expect(await store.breakLeasesOf('dead#1')).toEqual(['j']);
    await expect(store.commit('j', { state: { cursor: 'late' } }, a!.grant)).rejects.toMatchObject({
      code: 'POLLER_LEASE_LOST',
    });
    const [b] = (await store.claimDue('live#2', { limit: 1, configVersion: 1 })).claims;
    expect(b!.grant).toMatchObject({ takeover: true, previousHolder: 'dead#1' });
    expect(b!.grant.epoch).toBeGreaterThan(a!.grant.epoch + 1);
  });

  it('an expired lease is claimable again, and the expired holder can no longer renew it', async () => {
    await store.reconcile([{ ...entry('j'), leaseTtlMs: 150 }], 1);
    const [a] = (await store.claimDue('A', { limit: 1, configVersion: 1 })).claims;
    await sleep(200);
    expect(await store.renewLease('j', a!.grant, 150)).toBe(false);
    const [b] = (await store.claimDue('B', { limit: 1, configVersion: 1 })).claims;
    expect(b!.grant).toMatchObject({ takeover: true, previousHolder: 'A' });
  });

  it('claims by id whatever the schedule, but not while another holder has the lease', async () => {
    await store.reconcile([entry('j', { nextRunAt: Date.now() + 600_000 })], 1);
    const a = (await store.claimById('j', 'A'))!;
    expect(a).toMatchObject({ jobId: 'j', grant: { holder: 'A', takeover: false } });
    expect(await store.claimById('j', 'B')).toBeNull();
    await store.releaseLease('j', a.grant);
    expect(await store.claimById('j', 'B')).not.toBeNull();
  });

  it('never hands out an epoch twice, also after the job was deleted', async () => {
    const a = (await store.acquireLease('j', 'A', 30_000))!;
    await store.deleteJob('j');
    expect(await store.load('j')).toBeNull();
    const b = (await store.acquireLease('j', 'A', 30_000))!;
    expect(b.epoch).toBeGreaterThan(a.epoch);
    await expect(store.commit('j', { state: { cursor: 'x' } }, a)).rejects.toMatchObject({
      code: 'POLLER_LEASE_LOST',
    });
  });

  it('a paused job is never due; a tick ending during the pause does not make it due again', async () => {
    await store.reconcile([entry('j')], 1);
    const [a] = (await store.claimDue('A', { limit: 1, configVersion: 1 })).claims;
    await store.commit('j', { state: { paused: true } });
    await store.commit('j', { state: { nextRunAt: Date.now() - 1000 }, releaseLease: true }, a!.grant);
    expect(await store.nextDueAt(1)).toBeNull();
    expect((await store.claimDue('B', { limit: 1, configVersion: 1 })).claims).toEqual([]);
    await store.commit('j', { state: { paused: false } });
    expect(await store.nextDueAt(1)).not.toBeNull();
  });
});

describe('PostgreSQL store: reconcile', () => {
  it('two daemons reconciling the same version: exactly one writes', async () => {
    const other = await createPostgresStateStore({ pool: scratch.openPool(), schema: scratch.schema });
    const results = await Promise.all([store.reconcile([entry('a')], 3), other.reconcile([entry('a')], 3)]);
    expect(results.filter((r) => r !== null)).toEqual([{ add: ['a'], replace: [], remove: [], keep: [] }]);
    expect(await store.reconciledVersion()).toBe(3);
    expect(await store.reconcile([entry('b')], 2)).toBeNull();
    expect((await store.loadAll()).map((s) => s.jobId)).toEqual(['a']);
  });

  it('adds, replaces (revoking the lease), keeps and removes; paused_on_boot only on add or when it turns on', async () => {
    await store.reconcile(
      [entry('keep'), entry('swap'), entry('drop'), entry('boot', { pausedOnBoot: true })],
      1,
    );
    expect((await store.load('boot'))!.paused).toBe(true);
    await store.commit('boot', { state: { paused: false } });
    const held = (await store.claimById('swap', 'A'))!;
    await store.commit('drop', { addSeen: ['x'] });
    const result = await store.reconcile(
      [entry('keep'), { ...entry('swap'), defHash: 'h-swap-2' }, entry('boot', { pausedOnBoot: true })],
      2,
    );
    expect(result).toEqual({ add: [], replace: ['swap'], remove: ['drop'], keep: ['boot', 'keep'] });
    // An operator's resume survives a reconcile that leaves the job as it was.
    expect((await store.load('boot'))!.paused).toBe(false);
    expect(await store.load('drop')).toBeNull();
    expect(await store.seenCount('drop')).toBe(0);
    await expect(store.commit('swap', { state: { cursor: 'old def' } }, held.grant)).rejects.toMatchObject({
      code: 'POLLER_LEASE_LOST',
    });
    expect((await store.clusterJob('swap'))!).toMatchObject({ holder: null, configVersion: 2 });
    expect((await store.clusterJob('keep'))!.configVersion).toBe(1);
  });

  it('writes patches of different shapes and value kinds as the per-job writes do', async () => {
    const cursor = { page: 2, ids: ['a', 'b'] };
    const at = Date.parse('2026-11-25T10:00:00.123Z');
    await store.reconcile([entry('plain'), entry('other')], 1);
    await store.commit('plain', { state: { cursor: 'old', lastError: 'x' }, addSeen: ['s1'] });
    const versionOf = async (id: string) =>
      Number(
        (
          await scratch.pool.query(
            `SELECT cursor_version FROM ${scratch.schema}.poll_job WHERE job_id = $1`,
            [id],
          )
        ).rows[0].cursor_version,
      );
    const before = await versionOf('plain');
    const shaped = (id: string, state: JobStatePatch, clearSeen = false): ReconcileEntry => ({
      ...entry(id),
      defHash: `h2-${id}`,
      ops: () => ({ state, clearSeen }),
    });
    await store.reconcile(
      [
        shaped('plain', { cursor, nextRunAt: at, lastError: null, breakerState: 2, baselined: true }, true),
        shaped('other', { nextRunAt: at + 1, scheduleKey: 'cron:x' }),
        shaped('fresh', { cursor: null, nominalAt: at, maxItems: 7, paused: true }),
      ],
      2,
    );
    expect(await store.load('plain')).toMatchObject({
      cursor,
      nextRunAt: at,
      lastError: null,
      breakerState: 2,
      baselined: true,
    });
    expect(await store.seenCount('plain')).toBe(0);
    expect(await store.load('other')).toMatchObject({
      nextRunAt: at + 1,
      scheduleKey: 'cron:x',
      cursor: null,
    });
    expect(await store.load('fresh')).toMatchObject({
      cursor: null,
      nominalAt: at,
      maxItems: 7,
      paused: true,
    });
    const { rows } = await scratch.pool.query(
      `SELECT job_id, cursor_version, due_at FROM ${scratch.schema}.poll_job ORDER BY job_id`,
    );
    // The cursor write counts like any other; a paused job is never due (the trigger ran on the bulk write).
    const byId = Object.fromEntries(rows.map((r) => [r.job_id, r]));
    expect(Number(byId.plain.cursor_version)).toBe(before + 1);
    expect(Number(byId.other.cursor_version)).toBe(0);
    expect(byId.fresh.due_at).toBeNull();
    expect((byId.other.due_at as Date).getTime()).toBe(at + 1);
  });

  it("waits for another daemon's reconcile beyond the session's lock timeout instead of failing", async () => {
    await store.reconcile([entry('a')], 1);
    const impatient = await createPostgresStateStore({
      pool: scratch.openPool({ lockTimeoutMs: 200, statementTimeoutMs: 1000 }),
      schema: scratch.schema,
    });
    // Another reconcile holds the version row for longer than the waiter's lock timeout and statement limit.
    const holder = await scratch.pool.connect();
    await holder.query('BEGIN');
    await holder.query(`SELECT * FROM ${scratch.schema}.poll_reconcile FOR UPDATE`);
    const waiting = impatient.reconcile([entry('a'), entry('b')], 2);
    await sleep(1500);
    await holder.query('COMMIT');
    holder.release();
    expect(await waiting).toEqual({ add: ['b'], replace: [], remove: [], keep: ['a'] });
  });

  it('hands the stored state of a replaced job to its entry, which may clear cursor and seen ids', async () => {
    await store.reconcile([entry('j')], 1);
    await store.commit('j', { state: { cursor: 'c1', baselined: true }, addSeen: ['x'] });
    let seenState = emptyJobState('none');
    const replaced: ReconcileEntry = {
      ...entry('j'),
      defHash: 'h2',
      ops: (current) => {
        seenState = current!;
        return { state: { cursor: null, baselined: false, sourceKey: 'src-2' }, clearSeen: true };
      },
    };
    await store.reconcile([replaced], 2);
    expect(seenState).toMatchObject({ jobId: 'j', cursor: 'c1', baselined: true });
    expect(await store.load('j')).toMatchObject({ cursor: null, baselined: false, sourceKey: 'src-2' });
    expect(await store.seenCount('j')).toBe(0);
  });
});
