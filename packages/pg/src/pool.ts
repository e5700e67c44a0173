/**
 * A pool whose every session carries the settings that keep a stalled holder from blocking the others:
 * statement and lock timeouts, an idle-in-transaction limit (a SIGSTOPped daemon's open transaction is
 * ended by the server), and an application name that says which daemon a session belongs to.
 */
import pg from 'pg';
import { PgError } from './errors.js';

export interface PoolOptions {
  /** `postgres://user:pass@host:port/db` (secrets usually come from `${file:}`). */
  url: string;
  /** Shown in `pg_stat_activity.application_name`; say which daemon this is. */
  applicationName: string;
  max?: number;
  statementTimeoutMs?: number;
  lockTimeoutMs?: number;
  idleInTransactionTimeoutMs?: number;
  connectTimeoutMs?: number;
  /** A session failed while idle in the pool (the server restarted, a link broke). */
  onIdleError?(err: Error): void;
}

export const POOL_DEFAULTS = {
  max: 10,
  statementTimeoutMs: 10_000,
  lockTimeoutMs: 5_000,
  idleInTransactionTimeoutMs: 15_000,
  connectTimeoutMs: 5_000,
} as const;

const INT8_OID = 20;

/** Fencing tokens, versions and counters are bigint columns; they stay numbers, never silently rounded. */
export function parseInt8(text: string): number {
  const value = Number(text);
  if (!Number.isSafeInteger(value))
    throw new PgError('PG_INT8_OVERFLOW', `bigint ${text} is beyond 2^53 - 1`);
  return value;
}

// Per pool, not `pg.types.setTypeParser`: the process-wide table belongs to whoever else loads `pg`.
const typeParsers = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === INT8_OID && format !== 'binary') return parseInt8;
    return pg.types.getTypeParser(oid, format);
  },
} as pg.CustomTypesConfig;

export function createPool(options: PoolOptions): pg.Pool {
  const o = { ...POOL_DEFAULTS, ...options };
  const pool = new pg.Pool({
    connectionString: o.url,
    application_name: o.applicationName.slice(0, 63),
    max: o.max,
    connectionTimeoutMillis: o.connectTimeoutMs,
    statement_timeout: o.statementTimeoutMs,
    lock_timeout: o.lockTimeoutMs,
    idle_in_transaction_session_timeout: o.idleInTransactionTimeoutMs,
    // A link that goes silent is noticed by the kernel instead of hanging a query forever.
    keepAlive: true,
    types: typeParsers,
  });
  // Without a listener an idle session's error would end the process.
  pool.on('error', (err) => options.onIdleError?.(err));
  return pool;
}

export type Queryable = pg.Pool | pg.PoolClient;

/**
 * Runs `work` in one transaction on one session: COMMIT when it resolves, ROLLBACK when it throws. A session
 * that failed (ended by the server, a broken link) or whose ROLLBACK failed is discarded, not returned to the
 * pool.
 */
export async function inTransaction<T>(
  pool: pg.Pool,
  work: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  // The pool listens for a session's errors only while it is idle in the pool. Checked out, a session that
  // fails between two statements (a server restart) emits 'error', which without a listener ends the process;
  // here it only marks the session broken, and the next statement of `work` fails.
  const onError = (err: Error): void => {
    broken ??= err;
  };
  client.on('error', onError);
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch((rollbackErr: Error) => {
      broken = rollbackErr;
    });
    throw err;
  } finally {
    client.removeListener('error', onError);
    client.release(broken);
  }
}
