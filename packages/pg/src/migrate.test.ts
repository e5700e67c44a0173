import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { migrate, type Migration } from './migrate.js';
import { scratchSchema, type ScratchSchema } from './testing.js';

const steps: Migration[] = [
  { version: 1, name: 'widgets', sql: 'CREATE TABLE {schema}.widget (id bigint PRIMARY KEY)' },
  { version: 2, name: 'widget names', sql: 'ALTER TABLE {schema}.widget ADD COLUMN name text' },
];

describe('migrate', () => {
  let db: ScratchSchema;
  beforeEach(async () => {
    db = await scratchSchema();
  });
  afterEach(() => db.drop());

  it('applies each step once, in order, and records it per component', async () => {
    const opts = { schema: db.schema, component: 'widgets', migrations: steps };
    expect(await migrate(db.pool, { ...opts, migrations: steps.slice(0, 1) })).toEqual({ from: 0, to: 1 });
    expect(await migrate(db.pool, opts)).toEqual({ from: 1, to: 2 });
    expect(await migrate(db.pool, opts)).toEqual({ from: 2, to: 2 });
    await db.pool.query(`INSERT INTO ${db.schema}.widget (id, name) VALUES (1, 'a')`);
    const other = await migrate(db.pool, { schema: db.schema, component: 'other', migrations: [] });
    expect(other).toEqual({ from: 0, to: 0 });
  });

  it('daemons starting together apply every step exactly once', async () => {
    const pools = [db.openPool(), db.openPool(), db.openPool()];
    const results = await Promise.all(
      pools.map((pool) => migrate(pool, { schema: db.schema, component: 'widgets', migrations: steps })),
    );
    expect(results.filter((r) => r.from === 0)).toHaveLength(1);
    const { rows } = await db.pool.query(
      `SELECT version FROM ${db.schema}.schema_migrations ORDER BY version`,
    );
    expect(rows.map((r) => r.version)).toEqual([1, 2]);
  });

  it('refuses a schema a newer build migrated, and rolls a failed step back', async () => {
    await migrate(db.pool, { schema: db.schema, component: 'widgets', migrations: steps });
    await expect(
      migrate(db.pool, { schema: db.schema, component: 'widgets', migrations: steps.slice(0, 1) }),
    ).rejects.toThrow(/PG_SCHEMA_TOO_NEW/);
    const broken = [...steps, { version: 3, name: 'bad', sql: 'ALTER TABLE {schema}.nope ADD COLUMN x int' }];
    await expect(
      migrate(db.pool, { schema: db.schema, component: 'widgets', migrations: broken }),
    ).rejects.toThrow(/migration 3 \(bad\): .*PG_MIGRATION_FAILED/);
    const { rows } = await db.pool.query(`SELECT max(version) AS v FROM ${db.schema}.schema_migrations`);
    expect(rows[0].v).toBe(2);
  });

  it('refuses schema names that are not plain identifiers', async () => {
    await expect(migrate(db.pool, { schema: 'a"; DROP', component: 'x', migrations: [] })).rejects.toThrow(
      /PG_BAD_SCHEMA_NAME/,
    );
  });
});
