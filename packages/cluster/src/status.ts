/**
 * `agent cluster status` and `GET /admin/cluster`: members with versions, the leader, jobs held, and who runs
 * chat (inbound partitions per member, the owner of each single-consumer channel instance).
 */
import { quoteSchema, type Pool } from '@agent/pg';
import { desiredVersion } from './bundle.js';
import { readLeader, type LeaderInfo } from './leader.js';
import { readMembers, type Member } from './members.js';

export interface ClusterStatusOptions {
  pool: Pool;
  schema: string;
  staleAfterMs: number;
  /** Name of the leader term to show; default `metrics`. */
  leaderName?: string;
  /**
   * Leases held now, by holder id. Default: read from the poller job table when it exists
   * (`poll_job.lease_holder` with an unexpired `lease_expires_at`); no such table means no counts.
   */
  jobsHeld?: () => Promise<ReadonlyMap<string, number>>;
}

export interface MemberStatus extends Member {
  /** Jobs this incarnation holds a lease on; null when unknown. */
  readonly jobsHeld: number | null;
  /** Inbound chat partitions (`inbound:<p>` leases) this incarnation holds; null when unknown. */
  readonly inboundPartitions: number | null;
}

/** The daemon holding the owner lease `channel:<plugin>/<instance>` of a single-consumer channel instance. */
export interface ChannelOwner {
  readonly plugin: string;
  readonly instance: string;
  readonly daemonId: string;
  readonly term: number;
  readonly expiresInMs: number;
}

export interface ClusterStatus {
  readonly members: readonly MemberStatus[];
  readonly leader: LeaderInfo | null;
  readonly desiredConfigVersion: number;
  /** Unexpired owner leases, by plugin then instance; null when the lease table could not be read. */
  readonly channelOwners: readonly ChannelOwner[] | null;
}

export async function clusterStatus(o: ClusterStatusOptions): Promise<ClusterStatus> {
  const [members, leader, desired, held, chat] = await Promise.all([
    readMembers(o.pool, quoteSchema(o.schema), o.staleAfterMs),
    readLeader(o.pool, o.schema, o.leaderName ?? 'metrics'),
    desiredVersion(o.pool, o.schema),
    (o.jobsHeld ?? (() => jobsHeldFromTable(o.pool, o.schema)))().catch(() => null),
    readChatLeases(o.pool, o.schema).catch(() => null),
  ]);
  return {
    members: members.map((m) => ({
      ...m,
      jobsHeld: held ? (held.get(m.holderId) ?? 0) : null,
      inboundPartitions: chat ? (chat.partitions.get(m.holderId) ?? 0) : null,
    })),
    leader,
    desiredConfigVersion: desired,
    channelOwners: chat?.owners ?? null,
  };
}

/** Counts unexpired leases by holder, if the poller table is there with the columns this expects. */
async function jobsHeldFromTable(
  pool: Pool,
  schemaName: string,
): Promise<ReadonlyMap<string, number> | null> {
  const { rows: cols } = await pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM information_schema.columns
      WHERE table_schema = $1 AND table_name = 'poll_job' AND column_name IN ('lease_holder', 'lease_expires_at')`,
    [schemaName],
  );
  if (cols[0]?.n !== 2) return null;
  const { rows } = await pool.query<{ holder: string; n: number }>(
    `SELECT lease_holder AS holder, count(*)::int AS n FROM ${quoteSchema(schemaName)}.poll_job
      WHERE lease_holder IS NOT NULL AND lease_expires_at > now() GROUP BY lease_holder`,
  );
  return new Map(rows.map((r) => [r.holder, r.n]));
}

const PARTITION_PREFIX = 'inbound:';
const CHANNEL_PREFIX = 'channel:';

interface ChatLeases {
  /** Inbound partitions held, by holder id. */
  readonly partitions: ReadonlyMap<string, number>;
  readonly owners: ChannelOwner[];
}

/**
 * The chat leases of the leader table in one read, on the database clock: `inbound:<p>` (partitions, written
 * by `@agent/chat-cluster`) and `channel:<plugin>/<instance>` (instance owners). Expired rows are nobody's.
 */
async function readChatLeases(pool: Pool, schemaName: string): Promise<ChatLeases> {
  const { rows } = await pool.query<{ name: string; holder: string; term: number; expires_in_ms: number }>(
    `SELECT name, holder, term, (extract(epoch FROM expires_at - now()) * 1000)::float8 AS expires_in_ms
       FROM ${quoteSchema(schemaName)}.cluster_leader
      WHERE (name LIKE '${PARTITION_PREFIX}%' OR name LIKE '${CHANNEL_PREFIX}%') AND expires_at > now()`,
  );
  const partitions = new Map<string, number>();
  const owners: ChannelOwner[] = [];
  for (const r of rows) {
    if (r.name.startsWith(PARTITION_PREFIX)) {
      partitions.set(r.holder, (partitions.get(r.holder) ?? 0) + 1);
      continue;
    }
    const key = r.name.slice(CHANNEL_PREFIX.length);
    const slash = key.indexOf('/');
    if (slash <= 0) continue; // not a name an instance owner writes
    owners.push({
      plugin: key.slice(0, slash),
      instance: key.slice(slash + 1),
      daemonId: r.holder.split('#')[0] ?? r.holder,
      term: r.term,
      expiresInMs: Math.round(r.expires_in_ms),
    });
  }
  owners.sort((a, b) => compare(a.plugin, b.plugin) || compare(a.instance, b.instance));
  return { partitions, owners };
}

const compare = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
