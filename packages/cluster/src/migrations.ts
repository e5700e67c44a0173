/**
 * The cluster tables (component `cluster`): membership, the leader terms, the config bundles and the
 * cluster's desired config version. Steps are append-only: a released step is never edited.
 */
import { migrate, type MigrateResult, type Migration, type Pool } from '@agent/pg';

const CLUSTER_COMPONENT = 'cluster';

const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'members, leader terms, config bundles, cluster state',
    sql: `
      CREATE TABLE {schema}.cluster_member (
        daemon_id              text PRIMARY KEY,
        incarnation            text NOT NULL,
        host                   text NOT NULL,
        pid                    integer NOT NULL,
        version                text NOT NULL,
        started_at             timestamptz NOT NULL,
        seen_at                timestamptz NOT NULL,
        left_at                timestamptz,
        applied_config_version bigint,
        applied_config_hash    text,
        ticks_in_flight        integer NOT NULL DEFAULT 0
      );
      CREATE TABLE {schema}.cluster_leader (
        name       text PRIMARY KEY,
        holder     text NOT NULL,
        term       bigint NOT NULL,
        expires_at timestamptz NOT NULL
      );
      CREATE TABLE {schema}.config_bundle (
        version    bigserial PRIMARY KEY,
        hash       text NOT NULL,
        files      jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        created_by text NOT NULL
      );
      CREATE TABLE {schema}.cluster_state (
        id                        boolean PRIMARY KEY DEFAULT true CHECK (id),
        desired_config_version    bigint NOT NULL DEFAULT 0,
        reconciled_config_version bigint NOT NULL DEFAULT 0
      );
      INSERT INTO {schema}.cluster_state (id) VALUES (true);
    `,
  },
];

/** Creates or upgrades the cluster tables in `schema`; safe when several daemons start together. */
export function migrateCluster(pool: Pool, schema: string): Promise<MigrateResult> {
  return migrate(pool, { schema, component: CLUSTER_COMPONENT, migrations: MIGRATIONS });
}
