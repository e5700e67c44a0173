import { scratchSchema, type ScratchSchema } from '@agent/pg/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLeaderElection } from './leader.js';
import { createMembership } from './membership.js';
import { migrateCluster } from './migrations.js';
import { clusterStatus } from './status.js';

let db: ScratchSchema;
const stops: (() => Promise<unknown>)[] = [];
beforeEach(async () => {
  db = await scratchSchema('cl');
  await migrateCluster(db.pool, db.schema);
});
afterEach(async () => {
  for (const stop of stops.splice(0).toReversed()) await stop().catch(() => {});
  await db.drop();
});

const STALE_AFTER_MS = 900;

async function member(daemonId: string) {
  const m = createMembership({
    pool: db.pool,
    schema: db.schema,
    daemonId,
    version: '1.2.3',
    host: `${daemonId}.lan`,
    intervalMs: 150,
    staleAfterMs: STALE_AFTER_MS,
    trustMarginMs: 250,
  });
  stops.push(() => m.stop());
  await m.start();
  return m;
}

/** A row of the leader table as another package writes it; `expiresInSecs` below 0 is an expired lease. */
async function lease(name: string, holder: string, term: number | string, expiresInSecs = 60) {
  await db.pool.query(
    `INSERT INTO "${db.schema}".cluster_leader (name, holder, term, expires_at)
     VALUES ($1, $2, $3, now() + make_interval(secs => $4))`,
    [name, holder, term, expiresInSecs],
  );
}

const status = () => clusterStatus({ pool: db.pool, schema: db.schema, staleAfterMs: STALE_AFTER_MS });

describe('cluster status: who runs chat', () => {
  it('counts the unexpired inbound partitions of each member and lists the channel owners by plugin and instance', async () => {
    const a = await member('a');
    const b = await member('b');
    for (const p of [0, 1, 2]) await lease(`inbound:${p}`, a.holderId, 1);
    await lease('inbound:3', b.holderId, 2);
    await lease('inbound:4', b.holderId, 1, -1);
    // A crashed incarnation's lease is not its successor's.
    await lease('inbound:5', 'a#crashed', 1);
    // The owner lease as an instance owner takes it: a leader term named after the instance.
    const owner = createLeaderElection({
      pool: db.pool,
      schema: db.schema,
      name: 'channel:chat_b/main',
      holderId: a.holderId,
      ttlMs: 30_000,
    });
    stops.push(() => owner.stop());
    await owner.start();
    await lease('channel:chat_b/alt', b.holderId, 4, -1);
    await lease('channel:chat_a/z', b.holderId, 4);
    await lease('channel:chat/x', 'gone#1', 7);
    await lease('metrics', b.holderId, 9);

    const s = await status();
    expect(s.members.map((m) => [m.daemonId, m.inboundPartitions])).toEqual([
      ['a', 3],
      ['b', 1],
    ]);
    expect(s.channelOwners?.map(({ expiresInMs: _, ...o }) => o)).toEqual([
      { plugin: 'chat', instance: 'x', daemonId: 'gone', term: 7 },
      { plugin: 'chat_a', instance: 'z', daemonId: 'b', term: 4 },
      { plugin: 'chat_b', instance: 'main', daemonId: 'a', term: 1 },
    ]);
    const main = s.channelOwners?.find((o) => o.instance === 'main');
    expect(main?.expiresInMs).toBeGreaterThan(20_000);
    expect(main?.expiresInMs).toBeLessThanOrEqual(30_000);
    expect(s.leader).toMatchObject({ daemonId: 'b', term: 9 });

    // A released owner lease is nobody's at once.
    await owner.stop();
    expect((await status()).channelOwners?.map((o) => `${o.plugin}/${o.instance}`)).toEqual([
      'chat/x',
      'chat_a/z',
    ]);
  });

  it('no chat leases: every member holds 0 partitions and there is no owner', async () => {
    await member('a');
    const s = await status();
    expect(s.members.map((m) => m.inboundPartitions)).toEqual([0]);
    expect(s.channelOwners).toEqual([]);
  });

  it('chat leases that cannot be read are unknown, not none; the rest of the status stands', async () => {
    const a = await member('a');
    await lease('inbound:0', a.holderId, 1);
    // A term beyond 2^53 is refused by the client rather than rounded (PG_INT8_OVERFLOW).
    await lease('channel:chat_b/main', a.holderId, '9007199254740993');
    const s = await status();
    expect(s.members.map((m) => [m.daemonId, m.state, m.inboundPartitions])).toEqual([['a', 'live', null]]);
    expect(s.channelOwners).toBeNull();
  });
});
