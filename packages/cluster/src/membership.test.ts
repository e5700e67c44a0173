import { scratchSchema, type ScratchSchema, cuttableLink } from '@agent/pg/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { waitFor } from '../test/wait.js';
import { pushBundle } from './bundle.js';
import { createMembership, type MembershipOptions } from './membership.js';
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

const FAST = { intervalMs: 150, staleAfterMs: 900, trustMarginMs: 250 };

function member(daemonId: string, extra: Partial<MembershipOptions> = {}) {
  const m = createMembership({
    pool: db.pool,
    schema: db.schema,
    daemonId,
    version: '1.2.3',
    host: `${daemonId}.lan`,
    ...FAST,
    ...extra,
  });
  stops.push(() => m.stop());
  return m;
}

describe('membership', () => {
  it('a member cut off from the database distrusts itself before the others report it stale', async () => {
    const link = await cuttableLink(db.url);
    const a = member('a');
    const b = member('b', { pool: db.openPool({ url: link.url, connectTimeoutMs: 300, max: 1 }) });
    const events: string[] = [];
    await a.start();
    await b.start();
    expect(b.trusted()).toBe(true);
    b.onTrustChange((t) => events.push(`b trusted=${t}`));
    a.onStaleMembers((ms) => events.push(`a saw stale ${ms.map((m) => m.holderId).join(',')}`));
    expect((await a.liveMembers()).map((m) => [m.daemonId, m.host, m.version, m.state])).toEqual([
      ['a', 'a.lan', '1.2.3', 'live'],
      ['b', 'b.lan', '1.2.3', 'live'],
    ]);

    const cutAt = performance.now();
    await link.cut();
    await waitFor('a to report b stale', () => events.some((e) => e.startsWith('a saw stale')));
    const elapsed = performance.now() - cutAt;
    expect(events[0]).toBe('b trusted=false');
    expect(events[1]).toBe(`a saw stale ${b.holderId}`);
    expect(b.trusted()).toBe(false);
    // Within the window plus one heartbeat of the observer.
    expect(elapsed).toBeLessThan(FAST.staleAfterMs + FAST.intervalMs + 400);
    expect(b.holderId).toMatch(/^b#\d+\.[0-9a-f]{8}$/);
    expect((await a.liveMembers()).map((m) => m.daemonId)).toEqual(['a']);
  });

  it('a killed session is replaced at the next heartbeat: trust is kept', async () => {
    const errors: Error[] = [];
    const a = member('a', {
      pool: db.openPool({ applicationName: `member ${db.schema}` }),
      onError: (e) => errors.push(e),
    });
    const changes: boolean[] = [];
    await a.start();
    a.onTrustChange((t) => changes.push(t));
    const { rows } = await db.pool.query(
      `SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity WHERE application_name = $1`,
      [`member ${db.schema}`],
    );
    expect(rows.length).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 100));
    await a.heartbeat();
    await a.heartbeat();
    expect(a.trusted()).toBe(true);
    expect(changes).toEqual([]);
    expect((await a.liveMembers()).map((m) => m.daemonId)).toEqual(['a']);
  });

  it('a graceful stop leaves at once: not live, never reported stale', async () => {
    const a = member('a');
    const b = member('b');
    const stale: string[] = [];
    a.onStaleMembers((ms) => stale.push(...ms.map((m) => m.daemonId)));
    await a.start();
    await b.start();
    await b.stop();
    expect(b.trusted()).toBe(false);
    expect((await a.liveMembers()).map((m) => m.daemonId)).toEqual(['a']);
    expect((await a.members()).find((m) => m.daemonId === 'b')?.state).toBe('left');
    await new Promise((r) => setTimeout(r, FAST.staleAfterMs + 300));
    expect(stale).toEqual([]);
    // Its id is free again at once.
    await member('b').start();
  });

  it('a restart takes over the row of its crashed incarnation and names it, which the others never see stale', async () => {
    const link = await cuttableLink(db.url);
    const a1 = member('a', { pool: db.openPool({ url: link.url, connectTimeoutMs: 300, max: 1 }) });
    await a1.start();
    expect(a1.replacedHolderId).toBeNull();
    // a1 dies without leaving: no heartbeat, no left row.
    await link.cut();
    await new Promise((r) => setTimeout(r, FAST.staleAfterMs + 200));
    const a2 = member('a');
    await a2.start();
    expect(a2.replacedHolderId).toBe(a1.holderId);
    // Once a2 holds the row, no other member can report a1 stale: breaking a1's leases falls to a2.
    const b = member('b');
    const stale: string[] = [];
    b.onStaleMembers((ms) => stale.push(...ms.map((m) => m.holderId)));
    await b.start();
    await b.heartbeat();
    expect(stale).toEqual([]);
    // A start after a graceful stop names the incarnation that left.
    await a2.stop();
    const a3 = member('a');
    await a3.start();
    expect(a3.replacedHolderId).toBe(a2.holderId);
  });

  it('a second live daemon with the same id is refused', async () => {
    await member('a').start();
    await expect(member('a').start()).rejects.toThrow(/CLUSTER_DUPLICATE_ID/);
  });

  it('reports the desired config version until it is applied, and shows it in the status', async () => {
    const a = member('a');
    const desired: number[] = [];
    a.onDesiredVersion((v) => desired.push(v));
    await a.start();
    const pushed = await pushBundle(db.pool, db.schema, { 'llm.yaml': 'providers: {}\n' }, 'test');
    await a.heartbeat();
    expect(desired).toEqual([pushed.version]);
    await a.setApplied(pushed.version, pushed.hash);
    await a.heartbeat();
    expect(desired).toEqual([pushed.version]);
    const status = await clusterStatus({ pool: db.pool, schema: db.schema, staleAfterMs: FAST.staleAfterMs });
    expect(status.desiredConfigVersion).toBe(pushed.version);
    expect(status.members).toMatchObject([
      { daemonId: 'a', appliedConfigVersion: pushed.version, appliedConfigHash: pushed.hash, jobsHeld: null },
    ]);
  });

  it('status counts the leases each member holds in the poller table', async () => {
    const a = member('a');
    await a.start();
    await db.pool.query(
      `CREATE TABLE "${db.schema}".poll_job (job_id text PRIMARY KEY, lease_holder text, lease_expires_at timestamptz)`,
    );
    await db.pool.query(
      `INSERT INTO "${db.schema}".poll_job VALUES ('j1', $1, now() + interval '1 min'), ('j2', $1, now() + interval '1 min'),
         ('j3', $1, now() - interval '1 min'), ('j4', NULL, NULL)`,
      [a.holderId],
    );
    const status = await clusterStatus({ pool: db.pool, schema: db.schema, staleAfterMs: FAST.staleAfterMs });
    expect(status.members.map((m) => [m.daemonId, m.jobsHeld])).toEqual([['a', 2]]);
    const custom = await clusterStatus({
      pool: db.pool,
      schema: db.schema,
      staleAfterMs: FAST.staleAfterMs,
      jobsHeld: async () => new Map([[a.holderId, 7]]),
    });
    expect(custom.members[0]!.jobsHeld).toBe(7);
  });
});
