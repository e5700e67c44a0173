/**
 * Test kit: a scratch schema on the test server, dropped afterwards. The server comes from `PG_URL`
 * (default: the local `test` database over loopback); a test fails, never skips, when it does not answer.
 */
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { createPool, type PoolOptions } from './pool.js';
import { quoteSchema } from './schema-name.js';

export const DEFAULT_TEST_PG_URL = 'postgres://postgres@127.0.0.1:5432/test';

export function testPgUrl(): string {
  return process.env['PG_URL'] ?? DEFAULT_TEST_PG_URL;
}

export interface ScratchSchema {
  url: string;
  schema: string;
  pool: pg.Pool;
  /** Opens another pool on the same server (a second daemon, say). */
  openPool(options?: Partial<PoolOptions>): pg.Pool;
  /** Drops the schema and ends every pool opened here. */
  drop(): Promise<void>;
}

export async function scratchSchema(prefix = 't'): Promise<ScratchSchema> {
  const url = testPgUrl();
  const schema = `${prefix}_${randomBytes(6).toString('hex')}`;
  const pools: pg.Pool[] = [];
  const openPool = (options: Partial<PoolOptions> = {}) => {
    const pool = createPool({ url, applicationName: `test ${schema}`, max: 4, ...options });
    pools.push(pool);
    return pool;
  };
  const pool = openPool();
  await pool.query(`CREATE SCHEMA ${quoteSchema(schema)}`);
  return {
    url,
    schema,
    pool,
    openPool,
    async drop() {
      await pool.query(`DROP SCHEMA IF EXISTS ${quoteSchema(schema)} CASCADE`).catch(() => {});
      await Promise.all(pools.map((p) => p.end().catch(() => {})));
    },
  };
}

export { cuttableLink, type CuttableLink } from './cuttable-link.js';
