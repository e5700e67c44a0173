/**
 * The behaviours every `StateStore` shares (memory, SQLite, PostgreSQL), as one table run against each.
 * A store under test comes with its lease TTL and a way to let that TTL run out: a fake clock moves for the
 * in-process stores, the database clock really passes for PostgreSQL.
 */
import { describe, expect, it } from 'vitest';
import type { StartWrite, StateStore } from '../src/index.js';

export interface StoreUnderTest {
  store: StateStore;
  /** A lease TTL for these tests (ms). */
  ttl: number;
  /** Lets more than `ttl` pass on the store's clock. */
  expire(): Promise<void>;
}

const lost = { code: 'POLLER_LEASE_LOST' };

const FULL_PATCH = {
  cursor: { etag: 'W/"1"', ids: [1, 'two', null], nested: { ok: true } },
  baselined: true,
  paused: true,
  consecutiveErrors: 3,
  lastFailureAlertAt: 11,
  nextRunAt: 12,
  nominalAt: 13,
  scheduleKey: 'every_secs:60',
  breakerState: 2 as const,
  breakerOpenedAt: 14,
  breakerOpenings: 2,
  breakerRetryAt: 15,
  lastStatus: 'transient' as const,
  lastError: 'boom',
  lastRunAt: 16,
  atFired: 'at:1',
  maxItems: 40,
};

/** Start-up writes as the runner makes them: in one batch when the store has it, else one job at a time. */
async function startWrites(s: StateStore, writes: StartWrite[]): Promise<void> {
  if (s.commitStart) return s.commitStart(writes);
  for (const w of writes) {
    await s.init(w.jobId, w.initial);
    await s.commit(w.jobId, w.ops);
  }
}

const behaviours: [string, (t: StoreUnderTest) => Promise<void>][] = [
  [
    'round-trips every state column, JSON cursors included',
    async ({ store: s }) => {
      await s.init('j', { sourceKey: 'k' });
      await s.commit('j', { state: FULL_PATCH });
      expect(await s.load('j')).toEqual({ jobId: 'j', sourceKey: 'k', ...FULL_PATCH });
      expect((await s.loadAll()).map((x) => x.jobId)).toEqual(['j']);
      await s.commit('j', { state: { cursor: 'plain string' } });
      expect((await s.load('j'))!.cursor).toBe('plain string');
    },
  ],
  [
    'init inserts a missing row once and leaves an existing one as it is',
    async ({ store: s }) => {
      expect(await s.load('j')).toBeNull();
      expect(await s.init('j', { sourceKey: 'a', paused: true })).toMatchObject({
        sourceKey: 'a',
        paused: true,
      });
      expect(await s.init('j', { sourceKey: 'b' })).toMatchObject({ sourceKey: 'a', paused: true });
    },
  ],
  [
    'start-up writes in one call: missing rows inserted with their initial values, every write applied',
    async ({ store: s }) => {
      await s.init('old', { sourceKey: 'k-old' });
      await s.commit('old', { state: { cursor: 'kept', nextRunAt: 5 } });
      // A store without the batch (PostgreSQL: cluster mode starts jobs by reconcile) gets what the runner
      // then does, an init and a commit per job: the outcome must be the same.
      await startWrites(s, [
        { jobId: 'old', initial: { sourceKey: 'ignored' }, ops: { state: { paused: true } } },
        { jobId: 'new', initial: { sourceKey: 'k-new' }, ops: { state: { nextRunAt: 7 } } },
        { jobId: 'moved', initial: { sourceKey: 'k' }, ops: { state: { sourceKey: 'k2' }, clearSeen: true } },
      ]);
      expect(await s.load('old')).toMatchObject({
        sourceKey: 'k-old',
        cursor: 'kept',
        nextRunAt: 5,
        paused: true,
      });
      expect(await s.load('new')).toMatchObject({ sourceKey: 'k-new', nextRunAt: 7, paused: false });
      expect(await s.load('moved')).toMatchObject({ sourceKey: 'k2' });
      expect((await s.loadAll()).map((x) => x.jobId)).toEqual(['moved', 'new', 'old']);
    },
  ],
  [
    'records deliveries and seen ids together, and evicts the oldest ids except those kept',
    async ({ store: s }) => {
      await s.commit('j', { addSeen: ['a', 'b', 'c', 'd'] });
      await s.commit('j', {
        addSeen: ['e'],
        keepSeen: ['a', 'e'],
        seenLimit: 3,
        delivery: { itemId: 'e', channel: 'chat_a', to: 'u', at: 5 },
      });
      expect([...(await s.seenAmong('j', ['a', 'b', 'c', 'd', 'e']))].sort()).toEqual(['a', 'd', 'e']);
      expect(await s.deliveries('j')).toEqual([{ itemId: 'e', channel: 'chat_a', to: 'u', at: 5 }]);
      await s.commit('j', { clearSeen: true });
      expect(await s.seenCount('j')).toBe(0);
      expect(await s.deliveries('j')).toEqual([]);
    },
  ],
  [
    'deleteJob removes the state, seen ids and deliveries of the job only',
    async ({ store: s }) => {
      for (const id of ['j', 'k'])
        await s.commit(id, {
          state: { cursor: id },
          addSeen: ['x'],
          delivery: { itemId: 'x', channel: 'c', to: 't', at: 1 },
        });
      await s.deleteJob('j');
      expect(await s.load('j')).toBeNull();
      expect(await s.seenCount('j')).toBe(0);
      expect(await s.deliveries('j')).toEqual([]);
      expect((await s.load('k'))!.cursor).toBe('k');
      expect(await s.seenCount('k')).toBe(1);
    },
  ],
  [
    'grants a free lease, refuses a held one, and counts a takeover of an expired one',
    async ({ store: s, ttl, expire }) => {
      const a = (await s.acquireLease('j', 'A', ttl))!;
      expect(a).toMatchObject({ holder: 'A', takeover: false });
      expect(await s.acquireLease('j', 'B', ttl)).toBeNull();
      expect(await s.holdsLease!('j', a)).toBe(true);
      await expire();
      const b = (await s.acquireLease('j', 'B', ttl))!;
      expect(b).toMatchObject({ takeover: true, previousHolder: 'A' });
      expect(b.epoch).toBeGreaterThan(a.epoch);
      expect(await s.holdsLease!('j', a)).toBe(false);
      await s.releaseLease('j', b);
      const c = (await s.acquireLease('j', 'A', ttl))!;
      expect(c).toMatchObject({ takeover: false });
      expect(c.epoch).toBeGreaterThan(b.epoch);
    },
  ],
  [
    'a grant that carries the job state carries it as a read under the grant sees it',
    async ({ store: s, ttl, expire }) => {
      const none = (await s.acquireLease('j', 'A', ttl))!;
      if (none.state !== undefined) expect(none.state).toBeNull();
      await s.init('j');
      await s.commit('j', { state: { cursor: 'from-A', nextRunAt: 7 }, releaseLease: true }, none);
      await expire();
      const b = (await s.acquireLease('j', 'B', ttl))!;
      if (b.state !== undefined) expect(b.state).toEqual(await s.load('j'));
    },
  ],
  [
    'refuses writes and renewals with a stale epoch; nothing of the stale write lands',
    async ({ store: s, ttl, expire }) => {
      await s.init('j');
      const a = (await s.acquireLease('j', 'A', ttl))!;
      await s.commit('j', { state: { cursor: 'from-A' } }, a);
      await expire();
      const b = (await s.acquireLease('j', 'B', ttl))!;
      await expect(s.commit('j', { state: { cursor: 'stale' }, addSeen: ['x'] }, a)).rejects.toMatchObject(
        lost,
      );
      expect(await s.renewLease('j', a, ttl)).toBe(false);
      expect((await s.load('j'))!.cursor).toBe('from-A');
      expect(await s.seenCount('j')).toBe(0);
      await s.commit('j', { state: { cursor: 'from-B' } }, b);
      expect((await s.load('j'))!.cursor).toBe('from-B');
      expect(await s.renewLease('j', b, ttl)).toBe(true);
      await s.revokeLease('j');
      await expect(s.commit('j', { state: { cursor: 'late' } }, b)).rejects.toMatchObject(lost);
    },
  ],
  [
    'a commit can release its lease in the same transaction; a stale one neither writes nor releases',
    async ({ store: s, ttl }) => {
      const a = (await s.acquireLease('j', 'A', ttl))!;
      await s.commit('j', { state: { cursor: 'done' }, releaseLease: true }, a);
      expect(await s.getLease('j')).toMatchObject({ holder: null, epoch: a.epoch });
      expect((await s.load('j'))!.cursor).toBe('done');
      const b = (await s.acquireLease('j', 'B', ttl))!;
      expect(b).toMatchObject({ takeover: false });
      await expect(
        s.commit('j', { state: { cursor: 'stale' }, addSeen: ['x'], releaseLease: true }, a),
      ).rejects.toMatchObject(lost);
      expect(await s.getLease('j')).toMatchObject({ holder: 'B', epoch: b.epoch });
      expect((await s.load('j'))!.cursor).toBe('done');
      expect(await s.seenCount('j')).toBe(0);
    },
  ],
  [
    'a commit can revoke the lease (reset): the holder can no longer write',
    async ({ store: s, ttl }) => {
      const a = (await s.acquireLease('j', 'A', ttl))!;
      await s.commit('j', { state: { cursor: null }, clearSeen: true, revokeLease: true });
      const l = (await s.getLease('j'))!;
      expect(l.holder).toBeNull();
      expect(l.epoch).toBeGreaterThan(a.epoch);
      await expect(s.commit('j', { state: { cursor: 'old' } }, a)).rejects.toMatchObject(lost);
      // A fence check alone (nothing to write) refuses too.
      await expect(s.commit('j', {}, a)).rejects.toMatchObject(lost);
    },
  ],
  [
    'breaks the lease of a dead holder only while that holder still holds it, and fences it',
    async ({ store: s }) => {
      const a = (await s.acquireLease('j', 'A', 86_400_000))!;
      expect(await s.breakLease('j', 'B')).toBe(false);
      expect(await s.breakLease('j', 'A')).toBe(true);
      const broken = (await s.getLease('j'))!;
      expect(broken.holder).toBeNull();
      expect(broken.epoch).toBeGreaterThan(a.epoch);
      await expect(s.commit('j', { state: { cursor: 'late' } }, a)).rejects.toMatchObject(lost);
      expect(await s.breakLease('j', 'A')).toBe(false);
      expect(await s.acquireLease('j', 'C', 30_000)).toMatchObject({ takeover: false });
    },
  ],
];

/** Runs every shared behaviour against a fresh store from `open`, closed by `close` after each. */
export function storeContract(
  name: string,
  open: () => Promise<StoreUnderTest>,
  close: (t: StoreUnderTest) => Promise<void> = (t) => t.store.close(),
): void {
  describe(`${name}: the StateStore behaviours`, () => {
    for (const [title, check] of behaviours)
      it(title, async () => {
        const t = await open();
        try {
          await check(t);
        } finally {
          await close(t);
        }
      });
  });
}
