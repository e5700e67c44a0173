import { createLeaderElection, migrateCluster, type LeaderElection } from '@agent/cluster';
import { scratchSchema, type ScratchSchema } from '@agent/pg/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createChannelStateStore, type OwnerFence } from './channel-state.js';
import { ChatClusterError } from './errors.js';
import { waitFor } from '../test/wait-for.js';
import { migrateChatCluster } from './migrations.js';

let db: ScratchSchema;
const stops: (() => Promise<unknown>)[] = [];
beforeEach(async () => {
  db = await scratchSchema('cs');
  await migrateCluster(db.pool, db.schema);
  await migrateChatCluster(db.pool, db.schema);
});
afterEach(async () => {
  for (const stop of stops.splice(0).toReversed()) await stop().catch(() => {});
  await db.drop();
});

const RESOURCE = 'channel:chat_b/bot1';

function lease(holderId: string): LeaderElection {
  const e = createLeaderElection({
    pool: db.pool,
    schema: db.schema,
    name: RESOURCE,
    holderId,
    ttlMs: 30_000,
  });
  stops.push(() => e.stop());
  return e;
}

function store(fence: () => OwnerFence | null, plugin = 'chat_b') {
  return createChannelStateStore({ pool: db.pool, schema: db.schema, plugin, fence });
}

async function row(key: string) {
  const { rows } = await db.pool.query<{ value: string; owner_epoch: number }>(
    `SELECT value, owner_epoch FROM "${db.schema}".channel_state WHERE plugin = 'chat_b' AND key = $1`,
    [key],
  );
  return rows[0];
}

async function fencedError(p: Promise<unknown>): Promise<string> {
  const err = await p.then(
    () => new Error('the write went through'),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ChatClusterError);
  return (err as ChatClusterError).code;
}

describe('channel state', () => {
  it('migrates once, and again without change', async () => {
    expect(await migrateChatCluster(db.pool, db.schema)).toEqual({ from: 1, to: 1 });
  });

  it('without a fence: plain reads and writes, per plugin', async () => {
    const b = store(() => null);
    const a = store(() => null, 'chat_a');
    expect(await b.get('offset:bot1')).toBeUndefined();
    await b.set('offset:bot1', '10');
    await b.set('offset:bot1', '11');
    await a.set('offset:bot1', 'other');
    expect(await b.get('offset:bot1')).toBe('11');
    expect(await a.get('offset:bot1')).toBe('other');
    expect(await row('offset:bot1')).toEqual({ value: '11', owner_epoch: 0 });
  });

  it("writes with the owner's live term, stamped with it; refuses once the term ended", async () => {
    const a = lease('a#1');
    await a.start();
    const s = store(() => ({ resource: RESOURCE, term: a.term() }));
    await s.set('offset:bot1', '5');
    expect(await row('offset:bot1')).toEqual({ value: '5', owner_epoch: 1 });

    // The term runs out on the database clock (a stalled owner) while this daemon still holds a fence.
    const stale = store(() => ({ resource: RESOURCE, term: 1 }));
    await db.pool.query(`UPDATE "${db.schema}".cluster_leader SET expires_at = now() WHERE name = $1`, [
      RESOURCE,
    ]);
    expect(await fencedError(stale.set('offset:bot1', '6'))).toBe('CHAT_STATE_FENCED');
    expect(await row('offset:bot1')).toEqual({ value: '5', owner_epoch: 1 });
  });

  it('a former owner cannot write under the next one; the next one reads and moves on', async () => {
    const a = lease('a#1');
    await a.start();
    const old = store(() => ({ resource: RESOURCE, term: 1 }));
    await old.set('offset:bot1', '7');
    await a.stop();
    const b = lease('b#1');
    await b.start();
    expect(b.term()).toBe(2);
    const next = store(() => ({ resource: RESOURCE, term: b.term() }));
    expect(await next.get('offset:bot1')).toBe('7');

    expect(await fencedError(old.set('offset:bot1', '99'))).toBe('CHAT_STATE_FENCED');
    await next.set('offset:bot1', '8');
    expect(await row('offset:bot1')).toEqual({ value: '8', owner_epoch: 2 });
  });

  it('a write racing a takeover waits for it and is refused', async () => {
    const a = lease('a#1');
    await a.start();
    const old = store(() => ({ resource: RESOURCE, term: 1 }));
    await old.set('offset:bot1', '1');
    const other = await db.pool.connect();
    try {
      await other.query('BEGIN');
      await other.query(
        `UPDATE "${db.schema}".cluster_leader SET holder = 'b#1', term = term + 1 WHERE name = $1`,
        [RESOURCE],
      );
      const write = old.set('offset:bot1', '2').then(
        () => 'written',
        (err: ChatClusterError) => err.code,
      );
      // The write waits on the lease row until the takeover ends, then sees the new term.
      await waitFor('the write to wait on the lease row', async () => {
        const { rows } = await db.pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE wait_event_type = 'Lock' AND query LIKE '%INSERT INTO "${db.schema}".channel_state%'`,
        );
        return (rows[0]?.n ?? 0) > 0;
      });
      await other.query('COMMIT');
      expect(await write).toBe('CHAT_STATE_FENCED');
    } finally {
      other.release();
    }
    expect(await row('offset:bot1')).toEqual({ value: '1', owner_epoch: 1 });
  });

  it('never lowers the epoch of a row, whatever the lease row says', async () => {
    const b = lease('b#1');
    await b.start();
    await db.pool.query(`UPDATE "${db.schema}".cluster_leader SET term = 2 WHERE name = $1`, [RESOURCE]);
    await store(() => ({ resource: RESOURCE, term: 2 })).set('offset:bot1', '20');
    // A lease row set back to an older term must not let that term overwrite the newer write.
    await db.pool.query(`UPDATE "${db.schema}".cluster_leader SET term = 1 WHERE name = $1`, [RESOURCE]);
    const older = store(() => ({ resource: RESOURCE, term: 1 }));
    expect(await fencedError(older.set('offset:bot1', '3'))).toBe('CHAT_STATE_FENCED');
    expect(await row('offset:bot1')).toEqual({ value: '20', owner_epoch: 2 });
    // A key the newer term never wrote is free for the current term.
    await older.set('offset:bot2', '4');
    expect(await row('offset:bot2')).toEqual({ value: '4', owner_epoch: 1 });
  });

  it('term 0 (the side does not run here) and an unknown lease never write', async () => {
    const a = lease('a#1');
    await a.start();
    expect(await fencedError(store(() => ({ resource: RESOURCE, term: 0 })).set('k', 'v'))).toBe(
      'CHAT_STATE_FENCED',
    );
    expect(
      await fencedError(store(() => ({ resource: 'channel:chat_b/other', term: 1 })).set('k', 'v')),
    ).toBe('CHAT_STATE_FENCED');
    expect(await row('k')).toBeUndefined();
  });
});
