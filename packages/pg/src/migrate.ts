/**
 * Versioned migrations, per component (the poller store, the cluster tables): each component's steps are
 * applied in order, each step once, under one advisory lock so that daemons starting together do not race.
 * Steps are append-only: a released step is never edited, a change is a new step.
 */
import type pg from 'pg';
import { PgError } from './errors.js';
import { inTransaction } from './pool.js';
import { quoteSchema } from './schema-name.js';

export interface Migration {
  /** 1, 2, 3... in order, without gaps. */
  version: number;
  name: string;
  /** SQL text; `{schema}` stands for the quoted schema name. */
  sql: string;
}

export interface MigrateResult {
  from: number;
  to: number;
}

export async function migrate(
  pool: pg.Pool,
  options: { schema: string; component: string; migrations: readonly Migration[] },
): Promise<MigrateResult> {
  const schema = quoteSchema(options.schema);
  const { component, migrations } = options;
  migrations.forEach((m, i) => {
    if (m.version !== i + 1)
      throw new Error(`migration ${m.name} of ${component} has version ${m.version}, not ${i + 1}`);
  });
  return inTransaction(pool, async (client) => {
    // One lock per schema: the CREATEs below are not safe to run twice at the same time.
    await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`agent-migrate:${options.schema}`]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${schema}.schema_migrations (
         component text NOT NULL, version integer NOT NULL, name text NOT NULL,
         applied_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (component, version))`,
    );
    const { rows } = await client.query<{ v: number | null }>(
      `SELECT max(version) AS v FROM ${schema}.schema_migrations WHERE component = $1`,
      [component],
    );
    const from = rows[0]?.v ?? 0;
    if (from > migrations.length)
      throw new PgError(
        'PG_SCHEMA_TOO_NEW',
        `schema ${options.schema} has ${component} migration ${from}; this build knows ${migrations.length}`,
      );
    for (const step of migrations.slice(from)) {
      try {
        await client.query(step.sql.replaceAll('{schema}', schema));
      } catch (err) {
        const reason = err instanceof Error ? err.message : String(err);
        throw new PgError(
          'PG_MIGRATION_FAILED',
          `${component} migration ${step.version} (${step.name}): ${reason}`,
          {
            cause: err,
          },
        );
      }
      await client.query(
        `INSERT INTO ${schema}.schema_migrations (component, version, name) VALUES ($1, $2, $3)`,
        [component, step.version, step.name],
      );
    }
    return { from, to: migrations.length };
  });
}
