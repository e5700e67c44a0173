/**
 * @agent/pg — PostgreSQL for cluster mode: one pool with safe session settings, transactions, and versioned
 * migrations per component. The only package that imports `pg`.
 */
export { PG_ERROR_CODES, PgError, type PgErrorCode, type PgErrorInfo } from './errors.js';
export { migrate, type Migration, type MigrateResult } from './migrate.js';
export {
  createPool,
  inTransaction,
  parseInt8,
  POOL_DEFAULTS,
  type PoolOptions,
  type Queryable,
} from './pool.js';
export { quoteSchema } from './schema-name.js';
export type { Pool, PoolClient } from 'pg';
