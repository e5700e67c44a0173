import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { inTransaction, parseInt8 } from './pool.js';
import { scratchSchema, type ScratchSchema } from './testing.js';

describe('pool', () => {
  let db: ScratchSchema;
  beforeEach(async () => {
    db = await scratchSchema();
  });
  afterEach(() => db.drop());

  it('every session carries the timeouts and the application name', async () => {
    const pool = db.openPool({ applicationName: 'daemon host-a', statementTimeoutMs: 1234 });
    const { rows } = await pool.query(
      `SELECT current_setting('statement_timeout') AS st, current_setting('idle_in_transaction_session_timeout') AS idle,
              current_setting('lock_timeout') AS lock, current_setting('application_name') AS app`,
    );
    expect(rows[0]).toEqual({ st: '1234ms', idle: '15s', lock: '5s', app: 'daemon host-a' });
  });

  it('bigints come back as numbers, and one beyond 2^53 is an error, not a rounded number', async () => {
    const { rows } = await db.pool.query('SELECT 42::bigint AS n');
    expect(rows[0].n).toBe(42);
    await expect(db.pool.query('SELECT 9007199254740993::bigint AS n')).rejects.toThrow(/PG_INT8_OVERFLOW/);
    expect(() => parseInt8('9007199254740993')).toThrow(/PG_INT8_OVERFLOW/);
  });

  it('a transaction commits when its work resolves and rolls back when it throws', async () => {
    await db.pool.query(`CREATE TABLE ${db.schema}.t (v int)`);
    await inTransaction(db.pool, (c) => c.query(`INSERT INTO ${db.schema}.t VALUES (1)`));
    await expect(
      inTransaction(db.pool, async (c) => {
        await c.query(`INSERT INTO ${db.schema}.t VALUES (2)`);
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    const { rows } = await db.pool.query(`SELECT v FROM ${db.schema}.t`);
    expect(rows).toEqual([{ v: 1 }]);
  });

  it('a transaction whose session the server ends while its work waits fails; nothing is thrown uncaught', async () => {
    // The session ends between two statements (here the idle-in-transaction timeout; a server restart does
    // the same): the client emits 'error' with no query running, which must reach inTransaction, not the process.
    const pool = db.openPool({ idleInTransactionTimeoutMs: 200, max: 1 });
    await expect(
      inTransaction(pool, async (c) => {
        await c.query('SELECT 1');
        await new Promise((resolve) => setTimeout(resolve, 600));
        await c.query('SELECT 2');
      }),
    ).rejects.toThrow(/terminat|not queryable/i);
    // The broken session was discarded: the next transaction gets a working one.
    expect(await inTransaction(pool, async (c) => (await c.query('SELECT 3 AS n')).rows[0].n)).toBe(3);
  });

  it('an idle session held open in a transaction is ended by the server', async () => {
    const pool = db.openPool({ idleInTransactionTimeoutMs: 200 });
    const client = await pool.connect();
    const ended = new Promise<Error>((resolve) => client.once('error', resolve));
    await client.query('BEGIN');
    expect((await ended).message).toMatch(/idle-in-transaction timeout/);
    client.release(true);
  });
});
