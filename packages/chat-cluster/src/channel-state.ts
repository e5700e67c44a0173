/**
 * Channel state (e.g. the `chat_b` offset) in PostgreSQL, shared by the daemons. A single-consumer
 * instance's writes carry its owner's fence: a write lands only while that owner term is still the current,
 * unexpired one, and never over a row a later term wrote, so a daemon that lost the instance cannot move
 * the offset under the new owner.
 */
import type { KeyValueStore } from '@agent/channels';
import { quoteSchema, type Pool } from '@agent/pg';
import { ChatClusterError } from './errors.js';

/** The owner term a write must still hold: `resource` is its row in `cluster_leader`. */
export interface OwnerFence {
  readonly resource: string;
  readonly term: number;
}

export interface ChannelStateOptions {
  pool: Pool;
  /** Schema of the cluster and chat tables (`migrateCluster`, `migrateChatCluster`). */
  schema: string;
  plugin: string;
  /**
   * The fence of the instance's owner, asked at each write (`InboundOwners.fence`); null for a plugin whose
   * inbound side needs no owner (its writes are plain upserts).
   */
  fence: () => OwnerFence | null;
}

export function createChannelStateStore(o: ChannelStateOptions): KeyValueStore {
  const schema = quoteSchema(o.schema);
  return {
    async get(key) {
      const { rows } = await o.pool.query<{ value: string }>(
        `SELECT value FROM ${schema}.channel_state WHERE plugin = $1 AND key = $2`,
        [o.plugin, key],
      );
      return rows[0]?.value;
    },
    async set(key, value) {
      const fence = o.fence();
      if (fence === null) {
        await o.pool.query(
          `INSERT INTO ${schema}.channel_state (plugin, key, value, updated_at) VALUES ($1, $2, $3, now())
           ON CONFLICT (plugin, key) DO UPDATE SET value = EXCLUDED.value, updated_at = EXCLUDED.updated_at`,
          [o.plugin, key, value],
        );
        return;
      }
      // FOR SHARE: a takeover that commits while this write runs is seen (the row is re-checked once it
      // is free), and the next owner's term starts only after this write committed or failed.
      const { rowCount } = await o.pool.query(
        `WITH owner AS (
           SELECT term FROM ${schema}.cluster_leader
            WHERE name = $4 AND term = $5 AND expires_at > now() FOR SHARE)
         INSERT INTO ${schema}.channel_state (plugin, key, value, owner_epoch, updated_at)
         SELECT $1, $2, $3, owner.term, now() FROM owner
         ON CONFLICT (plugin, key) DO UPDATE SET value = EXCLUDED.value,
           owner_epoch = EXCLUDED.owner_epoch, updated_at = EXCLUDED.updated_at
          WHERE channel_state.owner_epoch <= EXCLUDED.owner_epoch`,
        [o.plugin, key, value, fence.resource, fence.term],
      );
      if (rowCount === 0)
        throw new ChatClusterError(
          'CHAT_STATE_FENCED',
          `${o.plugin} state ${key} not written: owner term ${fence.term} of ${fence.resource} is no longer current`,
        );
    },
  };
}
