/**
 * The membership rows: one per daemon id, written by that daemon's heartbeat on the database clock.
 * `schema` is always the quoted name (`quoteSchema`).
 */
import type { Queryable } from '@agent/pg';

/** A daemon as the membership table shows it. */
export interface Member {
  readonly daemonId: string;
  readonly incarnation: string;
  /** `<daemon_id>#<incarnation>`: the holder id of this daemon's leases. */
  readonly holderId: string;
  readonly host: string;
  readonly pid: number;
  readonly version: string;
  readonly startedAt: Date;
  /** Milliseconds since its last heartbeat, on the database clock. */
  readonly seenAgoMs: number;
  /** `live`: seen within the window; `stale`: not seen for longer (dead until it beats again); `left`: stopped. */
  readonly state: 'live' | 'stale' | 'left';
  readonly appliedConfigVersion: number | null;
  readonly appliedConfigHash: string | null;
  readonly ticksInFlight: number;
}

export function holderIdOf(daemonId: string, incarnation: string): string {
  return `${daemonId}#${incarnation}`;
}

interface MemberRow {
  daemon_id: string;
  incarnation: string;
  host: string;
  pid: number;
  version: string;
  started_at: Date;
  seen_ago_ms: number;
  left: boolean;
  applied_config_version: number | null;
  applied_config_hash: string | null;
  ticks_in_flight: number;
}

/** Every member row (stale and left ones too), by daemon id. */
export async function readMembers(db: Queryable, schema: string, staleAfterMs: number): Promise<Member[]> {
  const { rows } = await db.query<MemberRow>(
    `SELECT daemon_id, incarnation, host, pid, version, started_at,
            (extract(epoch FROM now() - seen_at) * 1000)::float8 AS seen_ago_ms,
            left_at IS NOT NULL AS left,
            applied_config_version, applied_config_hash, ticks_in_flight
       FROM ${schema}.cluster_member ORDER BY daemon_id`,
  );
  return rows.map((r) => ({
    daemonId: r.daemon_id,
    incarnation: r.incarnation,
    holderId: holderIdOf(r.daemon_id, r.incarnation),
    host: r.host,
    pid: r.pid,
    version: r.version,
    startedAt: r.started_at,
    seenAgoMs: Math.max(0, Math.round(r.seen_ago_ms)),
    state: r.left ? 'left' : r.seen_ago_ms > staleAfterMs ? 'stale' : 'live',
    appliedConfigVersion: r.applied_config_version,
    appliedConfigHash: r.applied_config_hash,
    ticksInFlight: r.ticks_in_flight,
  }));
}

export interface JoinInput {
  daemonId: string;
  incarnation: string;
  host: string;
  pid: number;
  version: string;
  staleAfterMs: number;
}

/** A join: refused (another incarnation is live in the row), or taken, from `previous` when there was one. */
export type JoinResult = { joined: false } | { joined: true; previous: string | null };

/**
 * Takes the row of `daemonId` unless another incarnation is live in it (two daemons configured with one
 * id). `previous` is the incarnation whose row was taken (it crashed or left): once its row is ours, nobody
 * else can see that incarnation go stale, so its leases are ours to break.
 */
export async function joinRow(db: Queryable, schema: string, m: JoinInput): Promise<JoinResult> {
  const { rows } = await db.query<{ previous: string | null }>(
    `WITH prev AS (
       SELECT incarnation FROM ${schema}.cluster_member WHERE daemon_id = $1 AND incarnation <> $2)
     INSERT INTO ${schema}.cluster_member
       (daemon_id, incarnation, host, pid, version, started_at, seen_at)
     VALUES ($1, $2, $3, $4, $5, now(), now())
     ON CONFLICT (daemon_id) DO UPDATE SET
       incarnation = EXCLUDED.incarnation, host = EXCLUDED.host, pid = EXCLUDED.pid,
       version = EXCLUDED.version, started_at = now(), seen_at = now(), left_at = NULL,
       applied_config_version = NULL, applied_config_hash = NULL, ticks_in_flight = 0
     WHERE cluster_member.incarnation = EXCLUDED.incarnation
        OR cluster_member.left_at IS NOT NULL
        OR cluster_member.seen_at < now() - make_interval(secs => $6 / 1000.0)
     RETURNING (SELECT incarnation FROM prev) AS previous`,
    [m.daemonId, m.incarnation, m.host, m.pid, m.version, m.staleAfterMs],
  );
  const row = rows[0];
  return row ? { joined: true, previous: row.previous } : { joined: false };
}

/** One heartbeat: null when the row is no longer ours; else the cluster's desired config version. */
export async function beatRow(
  db: Queryable,
  schema: string,
  daemonId: string,
  incarnation: string,
  ticksInFlight: number,
): Promise<{ desiredConfigVersion: number } | null> {
  const { rows } = await db.query<{ desired: number }>(
    `UPDATE ${schema}.cluster_member SET seen_at = now(), ticks_in_flight = $3
      WHERE daemon_id = $1 AND incarnation = $2 AND left_at IS NULL
      RETURNING (SELECT desired_config_version FROM ${schema}.cluster_state) AS desired`,
    [daemonId, incarnation, ticksInFlight],
  );
  const row = rows[0];
  return row ? { desiredConfigVersion: row.desired ?? 0 } : null;
}

export async function setAppliedRow(
  db: Queryable,
  schema: string,
  daemonId: string,
  incarnation: string,
  version: number,
  hash: string,
): Promise<void> {
  await db.query(
    `UPDATE ${schema}.cluster_member SET applied_config_version = $3, applied_config_hash = $4
      WHERE daemon_id = $1 AND incarnation = $2`,
    [daemonId, incarnation, version, hash],
  );
}

export async function leaveRow(db: Queryable, schema: string, daemonId: string, incarnation: string) {
  await db.query(
    `UPDATE ${schema}.cluster_member SET left_at = now(), ticks_in_flight = 0
      WHERE daemon_id = $1 AND incarnation = $2`,
    [daemonId, incarnation],
  );
}
