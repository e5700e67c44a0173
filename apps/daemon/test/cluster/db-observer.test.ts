// The harness's database observer on the real PostgreSQL store: what its triggers record of grants, epoch
// ends and delivery writes, and what it reads back for the checker.
import { createPostgresMemory } from '@agent/agent-runtime/postgres';
import { migrateCluster } from '@agent/cluster';
import { scratchSchema, type ScratchSchema } from '@agent/pg/testing';
import { createPostgresStateStore, type ClaimingStore } from '@agent/poller-runtime/postgres';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startDbObserver, type DbObserver } from './db-observer.js';

let db: ScratchSchema;
let observer: DbObserver;
let store: ClaimingStore;
beforeEach(async () => {
  db = await scratchSchema('obs');
  await migrateCluster(db.pool, db.schema);
  observer = await startDbObserver({ url: db.url, schema: db.schema, staleAfterMs: 3000, everyMs: 50 });
  store = await createPostgresStateStore({ pool: db.pool, schema: db.schema });
  await db.pool.query(`INSERT INTO ${db.schema}.poll_reconcile (config_version) VALUES (1)`);
});
afterEach(async () => {
  await observer.stop().catch(() => {});
  await observer.close();
  await db.pool.query(`DROP SCHEMA IF EXISTS ${db.schema}_fault_audit CASCADE`);
  await db.drop();
});

const claim = async (holder: string) => {
  const batch = await store.claimDue(holder, { limit: 10, configVersion: 1 });
  return batch.claims[0]!;
};

describe('database observer', () => {
  it('records each grant with the slot it saw and how its epoch ended, and each delivery write', async () => {
    const t0 = await store.now();
    await store.init('j', { nextRunAt: t0 - 1000, nominalAt: t0 - 1000 });
    // A holds the tick, delivers one item, and releases with its outcome and next run.
    const a = await claim('A#1');
    const fenceA = { holder: 'A#1', epoch: a.grant.epoch };
    await store.commit(
      'j',
      { addSeen: ['i1'], delivery: { itemId: 'i1', channel: 'chat_b', to: '42', at: t0 } },
      fenceA,
    );
    await store.commit(
      'j',
      { state: { lastRunAt: t0, lastStatus: 'ok', nominalAt: t0, nextRunAt: t0 }, releaseLease: true },
      fenceA,
    );
    // B holds the next one and is declared dead: its lease is broken; a write under A's old epoch is refused.
    const b = await claim('B#1');
    await store.breakLeasesOf('B#1');
    await expect(
      store.commit('j', { delivery: { itemId: 'i2', channel: 'chat_b', to: '42', at: t0 } }, fenceA),
    ).rejects.toThrow();
    await observer.stop();

    const grants = await observer.grants();
    expect(grants).toEqual([
      expect.objectContaining({
        jobId: 'j',
        holder: 'A#1',
        epoch: a.grant.epoch,
        dueAt: t0 - 1000,
        slotAt: t0 - 1000,
        endedHow: 'released',
        ran: { status: 'ok', nextRunAt: t0 },
      }),
      expect.objectContaining({ holder: 'B#1', epoch: b.grant.epoch, dueAt: t0, endedHow: 'broken' }),
    ]);
    expect(grants[0]!.releasedAt).toBe(grants[0]!.endedAt);
    // B never ran a tick: no outcome is credited to it.
    expect(grants[1]!.ran).toBeUndefined();
    expect(grants[1]!.releasedAt).toBeUndefined();
    const audit = observer.audit();
    expect(audit).toEqual([
      expect.objectContaining({ itemId: 'i1', leaseEpoch: a.grant.epoch, holder: 'A#1', leaseHeld: true }),
    ]);
    expect(audit[0]!.writtenAt).toBeGreaterThanOrEqual(grants[0]!.grantedAt);
    expect(audit[0]!.writtenAt).toBeLessThanOrEqual(grants[0]!.endedAt!);
  });

  it('reads delivery rows the store trims later, and reports leases no live daemon holds', async () => {
    await store.init('j', { nextRunAt: (await store.now()) - 1000 });
    const a = await claim('A#1');
    const fence = { holder: 'A#1', epoch: a.grant.epoch };
    await store.commit('j', { delivery: { itemId: 'i1', channel: 'c', to: 'x', at: Date.now() } }, fence);
    await new Promise((r) => setTimeout(r, 200));
    await db.pool.query(`DELETE FROM ${db.schema}.poll_delivery`);
    await observer.stop();
    expect(observer.audit().map((r) => r.itemId)).toEqual(['i1']);
    // A holds j, and no member row says A#1 is alive.
    expect((await observer.endState()).orphanLeases).toEqual([{ jobId: 'j', holder: 'A#1' }]);
  });

  it('reads conversation memory by id, and none before a daemon created its table', async () => {
    expect(await observer.memoryRows()).toEqual([]);
    const memory = await createPostgresMemory({ pool: db.pool, schema: db.schema });
    await memory.appendExchange('a|0|chat_b|main|7000', 'c0#1', 're c0#1 after 0', new Date());
    await memory.close();
    expect(await observer.memoryRows()).toEqual([
      { id: expect.any(Number), sessionKey: 'a|0|chat_b|main|7000', role: 'user', content: 'c0#1' },
      {
        id: expect.any(Number),
        sessionKey: 'a|0|chat_b|main|7000',
        role: 'assistant',
        content: 're c0#1 after 0',
      },
    ]);
  });
});
