/**
 * @agent/poller-runtime/sqlite — the SQLite `StateStore` (better-sqlite3). WAL, busy timeout, versioned
 * migrations, short IMMEDIATE transactions, and fenced writes: every write of a tick first checks that
 * (holder, epoch) still holds the job's lease row. Everything SQLite-specific stays in this file.
 */
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { PollerError } from '@agent/poller-core';
import {
  DELIVERY_LOG_LIMIT,
  type BreakerState,
  type CommitOps,
  type DeliveryRecord,
  type Fence,
  type JobState,
  type JobStatePatch,
  type LeaseGrant,
  type StateStore,
  type TickStatus,
} from './store.js';
import { LeaseLostError } from './errors.js';

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

const MIGRATIONS: { version: number; sql: string }[] = [
  {
    version: 1,
    sql: `
      CREATE TABLE poll_state (
        job_id TEXT PRIMARY KEY,
        cursor TEXT,
        baselined INTEGER NOT NULL DEFAULT 0,
        paused INTEGER NOT NULL DEFAULT 0,
        consecutive_errors INTEGER NOT NULL DEFAULT 0,
        last_failure_alert_at INTEGER,
        next_run_at INTEGER,
        nominal_at INTEGER,
        schedule_key TEXT,
        breaker_state INTEGER NOT NULL DEFAULT 0,
        breaker_opened_at INTEGER,
        breaker_openings INTEGER NOT NULL DEFAULT 0,
        breaker_retry_at INTEGER,
        last_status TEXT,
        last_error TEXT,
        last_run_at INTEGER,
        source_key TEXT,
        at_fired TEXT,
        max_items INTEGER NOT NULL DEFAULT 0
      );
      CREATE TABLE poll_seen (
        job_id TEXT NOT NULL,
        item_id TEXT NOT NULL,
        seen_at INTEGER NOT NULL,
        ord INTEGER NOT NULL,
        PRIMARY KEY (job_id, item_id)
      );
      CREATE INDEX poll_seen_order ON poll_seen (job_id, ord);
      CREATE TABLE poll_delivery (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        job_id TEXT NOT NULL,
        item_id TEXT NOT NULL,
        channel TEXT NOT NULL,
        recipient TEXT NOT NULL,
        delivered_at INTEGER NOT NULL
      );
      CREATE INDEX poll_delivery_job ON poll_delivery (job_id, seq);
      CREATE TABLE poll_lease (
        job_id TEXT PRIMARY KEY,
        holder TEXT,
        epoch INTEGER NOT NULL,
        acquired_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL
      );
    `,
  },
];

const COLUMNS: [keyof Omit<JobState, 'jobId'>, string][] = [
  ['cursor', 'cursor'],
  ['baselined', 'baselined'],
  ['paused', 'paused'],
  ['consecutiveErrors', 'consecutive_errors'],
  ['lastFailureAlertAt', 'last_failure_alert_at'],
  ['nextRunAt', 'next_run_at'],
  ['nominalAt', 'nominal_at'],
  ['scheduleKey', 'schedule_key'],
  ['breakerState', 'breaker_state'],
  ['breakerOpenedAt', 'breaker_opened_at'],
  ['breakerOpenings', 'breaker_openings'],
  ['breakerRetryAt', 'breaker_retry_at'],
  ['lastStatus', 'last_status'],
  ['lastError', 'last_error'],
  ['lastRunAt', 'last_run_at'],
  ['sourceKey', 'source_key'],
  ['atFired', 'at_fired'],
  ['maxItems', 'max_items'],
];

type Row = Record<string, unknown>;

function toDb(key: keyof JobState, value: unknown): unknown {
  if (key === 'cursor') return value === null || value === undefined ? null : JSON.stringify(value);
  if (key === 'paused' || key === 'baselined') return value ? 1 : 0;
  return value ?? null;
}

function fromRow(r: Row): JobState {
  // Built field by field (no spread of a default object): this runs several times per tick.
  return {
    jobId: String(r.job_id),
    cursor: r.cursor === null ? null : JSON.parse(String(r.cursor)),
    baselined: r.baselined === 1,
    paused: r.paused === 1,
    consecutiveErrors: Number(r.consecutive_errors),
    lastFailureAlertAt: (r.last_failure_alert_at as number | null) ?? null,
    nextRunAt: (r.next_run_at as number | null) ?? null,
    nominalAt: (r.nominal_at as number | null) ?? null,
    scheduleKey: (r.schedule_key as string | null) ?? null,
    breakerState: Number(r.breaker_state) as BreakerState,
    breakerOpenedAt: (r.breaker_opened_at as number | null) ?? null,
    breakerOpenings: Number(r.breaker_openings),
    breakerRetryAt: (r.breaker_retry_at as number | null) ?? null,
    lastStatus: (r.last_status as TickStatus | null) ?? null,
    lastError: (r.last_error as string | null) ?? null,
    lastRunAt: (r.last_run_at as number | null) ?? null,
    sourceKey: (r.source_key as string | null) ?? null,
    atFired: (r.at_fired as string | null) ?? null,
    maxItems: Number(r.max_items),
  };
}

/** Opens (creating the file and its directory when missing) and migrates the state database. */
export function createSqliteStateStore(
  file: string,
  options: SqliteStateStoreOptions = {},
): SqliteStateStore {
  const now = options.now ?? Date.now;
  const path = resolve(file);
  let db: Database.Database;
  try {
    mkdirSync(dirname(path), { recursive: true });
    db = new Database(path, { timeout: options.busyTimeoutMs ?? 5000 });
  } catch (err) {
    throw new PollerError(
      'POLLER_STATE_DB',
      `cannot open the poller state database ${file}: ${(err as Error).message}`,
      { cause: err },
    );
  }
  try {
    const mode = String(db.pragma('journal_mode = WAL', { simple: true })).toLowerCase();
    if (mode !== 'wal')
      throw new Error(
        `journal_mode is "${mode}", not "wal" (is ${file} on a network or virtual file system? keep state_db on a local disk)`,
      );
    db.pragma(`synchronous = ${options.synchronous ?? 'NORMAL'}`);
    db.exec(
      'CREATE TABLE IF NOT EXISTS poll_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)',
    );
    const applied = new Set(
      (db.prepare('SELECT version FROM poll_migrations').all() as { version: number }[]).map(
        (r) => r.version,
      ),
    );
    for (const m of MIGRATIONS) {
      if (applied.has(m.version)) continue;
      db.transaction(() => {
        db.exec(m.sql);
        db.prepare('INSERT INTO poll_migrations (version, applied_at) VALUES (?, ?)').run(
          m.version,
          Date.now(),
        );
      }).immediate();
    }
  } catch (err) {
    db.close();
    throw new PollerError(
      'POLLER_STATE_DB',
      `cannot prepare the poller state database ${file}: ${(err as Error).message}`,
      { cause: err },
    );
  }

  const q = {
    load: db.prepare('SELECT * FROM poll_state WHERE job_id = ?'),
    loadAll: db.prepare('SELECT * FROM poll_state ORDER BY job_id'),
    insert: db.prepare('INSERT OR IGNORE INTO poll_state (job_id) VALUES (?)'),
    lease: db.prepare('SELECT holder, epoch, expires_at FROM poll_lease WHERE job_id = ?'),
    upsertLease: db.prepare(
      `INSERT INTO poll_lease (job_id, holder, epoch, acquired_at, expires_at) VALUES (@job, @holder, @epoch, @now, @expires)
       ON CONFLICT (job_id) DO UPDATE SET holder = @holder, epoch = @epoch, acquired_at = @now, expires_at = @expires`,
    ),
    renew: db.prepare('UPDATE poll_lease SET expires_at = ? WHERE job_id = ? AND holder = ? AND epoch = ?'),
    release: db.prepare(
      'UPDATE poll_lease SET holder = NULL, expires_at = ? WHERE job_id = ? AND holder = ? AND epoch = ?',
    ),
    clearSeen: db.prepare('DELETE FROM poll_seen WHERE job_id = ?'),
    clearDelivery: db.prepare('DELETE FROM poll_delivery WHERE job_id = ?'),
    maxOrd: db.prepare('SELECT COALESCE(MAX(ord), 0) AS m FROM poll_seen WHERE job_id = ?'),
    addSeen: db.prepare(
      'INSERT OR IGNORE INTO poll_seen (job_id, item_id, seen_at, ord) VALUES (?, ?, ?, ?)',
    ),
    countSeen: db.prepare('SELECT COUNT(*) AS n FROM poll_seen WHERE job_id = ?'),
    evict: db.prepare(
      `DELETE FROM poll_seen WHERE job_id = @job AND item_id IN (
         SELECT item_id FROM poll_seen WHERE job_id = @job AND item_id NOT IN (SELECT value FROM json_each(@keep))
         ORDER BY ord ASC LIMIT @n)`,
    ),
    seenAmong: db.prepare(
      'SELECT item_id FROM poll_seen WHERE job_id = ? AND item_id IN (SELECT value FROM json_each(?))',
    ),
    addDelivery: db.prepare(
      'INSERT INTO poll_delivery (job_id, item_id, channel, recipient, delivered_at) VALUES (?, ?, ?, ?, ?)',
    ),
    trimDelivery: db.prepare(
      `DELETE FROM poll_delivery WHERE job_id = ? AND seq <= (SELECT seq FROM poll_delivery WHERE job_id = ? ORDER BY seq DESC LIMIT 1 OFFSET ?)`,
    ),
    deliveries: db.prepare(
      'SELECT * FROM (SELECT * FROM poll_delivery WHERE job_id = ? ORDER BY seq DESC LIMIT ?) ORDER BY seq ASC',
    ),
  };

  const checkFence = (jobId: string, fence: Fence | null | undefined) => {
    if (!fence) return;
    const l = q.lease.get(jobId) as { holder: string | null; epoch: number } | undefined;
    if (!l || l.holder !== fence.holder || l.epoch !== fence.epoch) throw new LeaseLostError();
  };

  // One prepared UPDATE per set of patched columns (a handful of shapes: tick end, failure, pause, ...).
  const updates = new Map<string, Database.Statement>();
  const patchState = (jobId: string, patch: JobStatePatch) => {
    const cols: string[] = [];
    const values: unknown[] = [];
    for (const [key, col] of COLUMNS)
      if (Object.hasOwn(patch, key)) {
        cols.push(col);
        values.push(toDb(key, patch[key]));
      }
    if (cols.length === 0) {
      q.insert.run(jobId);
      return;
    }
    const shape = cols.join(',');
    let update = updates.get(shape);
    if (!update) {
      update = db.prepare(`UPDATE poll_state SET ${cols.map((c) => `${c} = ?`).join(', ')} WHERE job_id = ?`);
      updates.set(shape, update);
    }
    values.push(jobId);
    // The row nearly always exists: insert only when the update found none.
    if (update.run(values).changes === 0) {
      q.insert.run(jobId);
      update.run(values);
    }
  };

  const commitTx = db.transaction((jobId: string, ops: CommitOps, fence: Fence | null | undefined) => {
    checkFence(jobId, fence);
    if (ops.state) patchState(jobId, ops.state);
    if (ops.clearSeen) {
      q.clearSeen.run(jobId);
      q.clearDelivery.run(jobId);
    }
    if (ops.addSeen?.length) {
      let ord = (q.maxOrd.get(jobId) as { m: number }).m;
      const t = now();
      for (const id of ops.addSeen) q.addSeen.run(jobId, id, t, ++ord);
    }
    // Evicts when the commit adds ids or names the ids to keep (the runner's last write of a tick).
    if (ops.seenLimit !== undefined && (ops.addSeen?.length || ops.keepSeen !== undefined)) {
      const n = (q.countSeen.get(jobId) as { n: number }).n - ops.seenLimit;
      if (n > 0) q.evict.run({ job: jobId, keep: JSON.stringify(ops.keepSeen ?? []), n });
    }
    if (ops.delivery) {
      const d = ops.delivery;
      q.addDelivery.run(jobId, d.itemId, d.channel, d.to, d.at);
      q.trimDelivery.run(jobId, jobId, DELIVERY_LOG_LIMIT);
    }
    if (ops.releaseLease && fence) q.release.run(now(), jobId, fence.holder, fence.epoch);
  });

  const acquireTx = db.transaction((jobId: string, holder: string, ttlMs: number): LeaseGrant | null => {
    const t = now();
    const l = q.lease.get(jobId) as { holder: string | null; epoch: number; expires_at: number } | undefined;
    if (l && l.holder !== null && l.holder !== holder && l.expires_at > t) return null;
    const epoch = (l?.epoch ?? 0) + 1;
    const expiresAt = t + ttlMs;
    q.upsertLease.run({ job: jobId, holder, epoch, now: t, expires: expiresAt });
    return {
      holder,
      epoch,
      expiresAt,
      takeover: !!l && l.holder !== null && l.holder !== holder,
      previousHolder: l?.holder ?? null,
    };
  });

  const revokeTx = db.transaction((jobId: string) => {
    const t = now();
    const l = q.lease.get(jobId) as { epoch: number } | undefined;
    q.upsertLease.run({ job: jobId, holder: null, epoch: (l?.epoch ?? 0) + 1, now: t, expires: t });
  });

  const breakTx = db.transaction((jobId: string, holder: string): boolean => {
    const l = q.lease.get(jobId) as { holder: string | null; epoch: number } | undefined;
    if (!l || l.holder !== holder) return false;
    const t = now();
    q.upsertLease.run({ job: jobId, holder: null, epoch: l.epoch + 1, now: t, expires: t });
    return true;
  });

  const deleteTx = db.transaction((jobId: string) => {
    db.prepare('DELETE FROM poll_state WHERE job_id = ?').run(jobId);
    q.clearSeen.run(jobId);
    q.clearDelivery.run(jobId);
    db.prepare('DELETE FROM poll_lease WHERE job_id = ?').run(jobId);
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
