import { scratchSchema, type ScratchSchema, cuttableLink } from '@agent/pg/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { waitFor } from '../test/wait.js';
import { createLeaderElection, readLeader, type LeaderOptions } from './leader.js';
import { migrateCluster } from './migrations.js';

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

const TTL = 900;

function candidate(holderId: string, extra: Partial<LeaderOptions> = {}) {
  const e = createLeaderElection({
    pool: db.pool,
    schema: db.schema,
    name: 'metrics',
    holderId,
    ttlMs: TTL,
    intervalMs: 150,
    ...extra,
  });
  stops.push(() => e.stop());
  return e;
}

describe('leader election', () => {
  it('one leader at a time; a leader cut off steps down before the next one takes over within the TTL', async () => {
    const link = await cuttableLink(db.url);
    const a = candidate('a#1', { pool: db.openPool({ url: link.url, connectTimeoutMs: 300, max: 1 }) });
    const b = candidate('b#1');
    const events: string[] = [];
    a.onChange((l) => events.push(`a leader=${l}`));
    b.onChange((l) => events.push(`b leader=${l}`));
    await a.start();
    await b.start();
    expect(a.isLeader()).toBe(true);
    expect(b.isLeader()).toBe(false);
    await b.campaign();
    expect(b.isLeader()).toBe(false);
    expect(await readLeader(db.pool, db.schema, 'metrics')).toMatchObject({
      holderId: 'a#1',
      daemonId: 'a',
      term: 1,
    });

    const cutAt = performance.now();
    await link.cut();
    await waitFor('b to lead', () => b.isLeader(), 3000);
    expect(performance.now() - cutAt).toBeLessThan(TTL + 150 + 400);
    expect(events).toEqual(['a leader=true', 'a leader=false', 'b leader=true']);
    expect(a.isLeader()).toBe(false);
    expect(b.term()).toBe(2);
  });

  it('stop gives the term up: the next candidate leads at its next round', async () => {
    const a = candidate('a#1');
    const b = candidate('b#1');
    await a.start();
    await b.start();
    await a.stop();
    expect(a.isLeader()).toBe(false);
    await b.campaign();
    expect(b.isLeader()).toBe(true);
    expect(await readLeader(db.pool, db.schema, 'metrics')).toMatchObject({ holderId: 'b#1', term: 2 });
  });

  it('a holder renews only its own unexpired term', async () => {
    const a = candidate('a#1');
    await a.start();
    // Someone else took the row (as after our term expired): our renewal must not take it back.
    await db.pool.query(`UPDATE "${db.schema}".cluster_leader SET holder = 'c#9', term = term + 1`);
    await a.campaign();
    expect(a.isLeader()).toBe(false);
    expect(await readLeader(db.pool, db.schema, 'metrics')).toMatchObject({ holderId: 'c#9', term: 2 });
  });
});
