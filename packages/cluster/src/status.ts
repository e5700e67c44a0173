/** `agent cluster status` and `GET /admin/cluster`: members with versions, the leader, jobs held. */
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
}

export interface ClusterStatus {
  readonly members: readonly MemberStatus[];
  readonly leader: LeaderInfo | null;
  readonly desiredConfigVersion: number;
}

export async function clusterStatus(o: ClusterStatusOptions): Promise<ClusterStatus> {
  const [members, leader, desired, held] = await Promise.all([
    readMembers(o.pool, quoteSchema(o.schema), o.staleAfterMs),
    readLeader(o.pool, o.schema, o.leaderName ?? 'metrics'),
    desiredVersion(o.pool, o.schema),
    (o.jobsHeld ?? (() => jobsHeldFromTable(o.pool, o.schema)))().catch(() => null),
  ]);
  return {
    members: members.map((m) => ({
      ...m,
      jobsHeld: held ? (held.get(m.holderId) ?? 0) : null,
    })),
    leader,
    desiredConfigVersion: desired,
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
