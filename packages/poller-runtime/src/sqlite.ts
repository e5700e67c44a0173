/**
 * @agent/poller-runtime/sqlite — the SQLite `StateStore` (better-sqlite3). WAL, busy timeout, versioned
 * migrations, short IMMEDIATE transactions, and fenced writes: every write of a tick first checks that
 * (holder, epoch) still holds the job's lease row. Everything SQLite-specific stays in the sqlite*.ts files.
 */
import { DELIVERY_LOG_LIMIT, type DeliveryRecord, type StartWrite, type StateStore } from './store.js';
import { fromRow, openDatabase, prepareQueries, type Row } from './sqlite-schema.js';
import { createTransactions } from './sqlite-tx.js';

export interface SqliteStateStoreOptions {
  /** Clock for lease expiry and `seen_at` (ms); default `Date.now`. */
  now?: () => number;
  /** How long a write waits for another process's lock; default 5000 ms. */
  busyTimeoutMs?: number;
  /**
   * `NORMAL` (default, WAL): every commit survives a process crash (SIGKILL included); a power loss may roll
   * back the last commits, which can repeat their deliveries but never loses one. `FULL` also survives power
   * loss, at an fsync per commit (several per tick).
   */
  synchronous?: 'FULL' | 'NORMAL';
}

export interface SqliteStateStore extends StateStore {
  /** The resolved file path. */
  readonly path: string;
  /** Applied migration versions. */
  migrations(): number[];
  /** `wal` when WAL is active. */
  journalMode(): string;
}

/** Opens (creating the file and its directory when missing) and migrates the state database. */
export function createSqliteStateStore(
  file: string,
  options: SqliteStateStoreOptions = {},
): SqliteStateStore {
  const now = options.now ?? Date.now;
  const { db, path } = openDatabase(file, options);
  const q = prepareQueries(db);
  const { patchState, commitTx, acquireTx, revokeTx, breakTx, deleteTx } = createTransactions(db, q, now);
  const startTx = db.transaction((writes: readonly StartWrite[]) => {
    for (const w of writes) {
      if (!q.load.get(w.jobId)) patchState(w.jobId, w.initial);
      commitTx(w.jobId, w.ops, null);
    }
  });

  const store: SqliteStateStore = {
    path,
    migrations: () =>
      (db.prepare('SELECT version FROM poll_migrations ORDER BY version').all() as { version: number }[]).map(
        (r) => r.version,
      ),
    journalMode: () => String(db.pragma('journal_mode', { simple: true })),
    async load(jobId) {
      const r = q.load.get(jobId) as Row | undefined;
      return r ? fromRow(r) : null;
    },
    async loadAll() {
      return (q.loadAll.all() as Row[]).map(fromRow);
    },
    async init(jobId, initial = {}) {
      db.transaction(() => {
        if (!q.load.get(jobId)) patchState(jobId, initial);
      }).immediate();
      return fromRow(q.load.get(jobId) as Row);
    },
    async commit(jobId, ops, fence) {
      commitTx.immediate(jobId, ops, fence);
    },
    async commitStart(writes) {
      startTx.immediate(writes);
    },
    async seenAmong(jobId, ids) {
      if (ids.length === 0) return new Set();
      return new Set(
        (q.seenAmong.all(jobId, JSON.stringify(ids)) as { item_id: string }[]).map((r) => r.item_id),
      );
    },
    async seenCount(jobId) {
      return (q.countSeen.get(jobId) as { n: number }).n;
    },
    async deliveries(jobId, limit = DELIVERY_LOG_LIMIT): Promise<DeliveryRecord[]> {
      return (q.deliveries.all(jobId, limit) as Row[]).map((r) => ({
        itemId: String(r.item_id),
        channel: String(r.channel),
        to: String(r.recipient),
        at: Number(r.delivered_at),
      }));
    },
    async deleteJob(jobId) {
      deleteTx.immediate(jobId);
    },
    async acquireLease(jobId, holder, ttlMs) {
      return acquireTx.immediate(jobId, holder, ttlMs);
    },
    async renewLease(jobId, fence, ttlMs) {
      return q.renew.run(now() + ttlMs, jobId, fence.holder, fence.epoch).changes === 1;
    },
    async releaseLease(jobId, fence) {
      q.release.run(now(), jobId, fence.holder, fence.epoch);
    },
    async revokeLease(jobId) {
      revokeTx.immediate(jobId);
    },
    async breakLease(jobId, holder) {
      return breakTx.immediate(jobId, holder);
    },
    async holdsLease(jobId, fence) {
      // One primary-key lookup, no transaction: a read of the WAL snapshot as of now.
      const l = q.lease.get(jobId) as { holder: string | null; epoch: number } | undefined;
      return !!l && l.holder === fence.holder && l.epoch === fence.epoch;
    },
    async getLease(jobId) {
      const l = q.lease.get(jobId) as
        { holder: string | null; epoch: number; expires_at: number } | undefined;
      return l ? { holder: l.holder, epoch: l.epoch, expiresAt: l.expires_at } : null;
    },
    async close() {
      if (db.open) db.close();
    },
  };
  return store;
}
