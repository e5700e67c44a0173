/**
 * The chat tables (component `chat`): channel state shared by the daemons, each row stamped with the owner
 * term that wrote it. Owner leases live in the cluster's `cluster_leader` table (`migrateCluster` first).
 * Steps are append-only: a released step is never edited.
 */
import { migrate, type MigrateResult, type Migration, type Pool } from '@agent/pg';

const CHAT_COMPONENT = 'chat';

const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'channel state',
    sql: `
      CREATE TABLE {schema}.channel_state (
        plugin      text NOT NULL,
        key         text NOT NULL,
        value       text NOT NULL,
        owner_epoch bigint NOT NULL DEFAULT 0,
        updated_at  timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (plugin, key)
      );
    `,
  },
];

/** Creates or upgrades the chat tables in `schema`; safe when several daemons start together. */
export function migrateChatCluster(pool: Pool, schema: string): Promise<MigrateResult> {
  return migrate(pool, { schema, component: CHAT_COMPONENT, migrations: MIGRATIONS });
}
