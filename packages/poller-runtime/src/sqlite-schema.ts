/** The SQLite state database: its migrations, row mapping, opening and prepared queries. */
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { PollerError } from '@agent/poller-core';
import type { SqliteStateStoreOptions } from './sqlite.js';
import type { BreakerState, JobState, TickStatus } from './store.js';

// Required, not imported: Node's `import` of a CommonJS package scans its source for named exports, and the
// memory that takes stays for the life of the process (about 1 MB of resident memory for this package,
// measured in a bare `node`).
const Database = createRequire(import.meta.url)('better-sqlite3') as typeof BetterSqlite3;

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

export const COLUMNS: [keyof Omit<JobState, 'jobId'>, string][] = [
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

export type Row = Record<string, unknown>;

export function toDb(key: keyof JobState, value: unknown): unknown {
  if (key === 'cursor') return value === null || value === undefined ? null : JSON.stringify(value);
  if (key === 'paused' || key === 'baselined') return value ? 1 : 0;
  return value ?? null;
}

export function fromRow(r: Row): JobState {
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

/** Opens (creating the file and its directory when missing) the database in WAL mode and migrates it. */
export function openDatabase(
  file: string,
  options: SqliteStateStoreOptions,
): { db: BetterSqlite3.Database; path: string } {
  const path = resolve(file);
  let db: BetterSqlite3.Database;
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
  return { db, path };
}

type QueryName =
  | 'load'
  | 'loadAll'
  | 'insert'
  | 'lease'
  | 'upsertLease'
  | 'renew'
  | 'release'
  | 'clearSeen'
  | 'clearDelivery'
  | 'maxOrd'
  | 'addSeen'
  | 'countSeen'
  | 'evict'
  | 'seenAmong'
  | 'addDelivery'
  | 'trimDelivery'
  | 'deliveries';

export type Queries = Record<QueryName, BetterSqlite3.Statement>;

export function prepareQueries(db: BetterSqlite3.Database): Queries {
  return {
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
}
