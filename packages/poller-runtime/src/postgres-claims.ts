/**
 * Lease grants on the job row, on the database clock: the batch claim of due jobs (`FOR UPDATE SKIP
 * LOCKED`), the claim of one job by id, and the breaking of a dead holder's leases. Every grant takes its
 * epoch from the global fence sequence, so no epoch is ever handed out twice.
 */
import type { Pool, Queryable } from '@agent/pg';
import type { ClaimBatch, JobClaim } from './claiming-store.js';
import { msOf, stateOfRow, type PgRow } from './postgres-schema.js';
import { ensureRow, type PgNames } from './postgres-tx.js';
import type { LeaseGrant } from './store.js';

/** The SET list of a grant to `$1`, expiring after `ttl` (an SQL expression in ms). */
const grantSet = (t: PgNames, ttl: string) =>
  `lease_holder = $1, lease_epoch = nextval('${t.fence}'), lease_acquired_at = now(),
   lease_expires_at = now() + (${ttl}) * interval '1 millisecond', lease_broken_from = NULL`;

function grantOf(holder: string, r: PgRow): LeaseGrant {
  const prev = (r.prev_holder as string | null) ?? null;
  const broken = (r.broken_from as string | null) ?? null;
  return {
    holder,
    epoch: Number(r.lease_epoch),
    expiresAt: msOf(r.lease_expires_at)!,
    // An expired lease of another holder, or one broken because its holder died.
    takeover: (prev !== null && prev !== holder) || broken !== null,
    previousHolder: prev ?? broken,
  };
}

const claimOf = (holder: string, r: PgRow): JobClaim => ({
  jobId: String(r.job_id),
  grant: grantOf(holder, r),
  state: stateOfRow(r),
  leaseTtlMs: Number(r.lease_ttl_ms),
  dbNow: msOf(r.db_now)!,
});

export async function claimDue(
  pool: Pool,
  t: PgNames,
  holder: string,
  options: { limit: number; configVersion: number },
): Promise<ClaimBatch> {
  const { rows } = await pool.query(
    `WITH ready AS (SELECT EXISTS (SELECT 1 FROM ${t.reconcile} WHERE config_version >= $3) AS ok),
     due AS (
       SELECT job_id, lease_holder AS prev_holder, lease_broken_from AS broken_from FROM ${t.job}
       WHERE due_at <= now() AND config_version <= $3 AND (SELECT ok FROM ready)
       ORDER BY due_at LIMIT $2 FOR UPDATE SKIP LOCKED),
     claimed AS (
       UPDATE ${t.job} j SET ${grantSet(t, 'j.lease_ttl_ms')}
       FROM due WHERE j.job_id = due.job_id
       RETURNING j.*, due.prev_holder, due.broken_from, now() AS db_now)
     SELECT c.*, now() AS now_at,
       CASE WHEN (SELECT ok FROM ready) THEN (SELECT min(due_at) FROM ${t.job}
         WHERE due_at IS NOT NULL AND config_version <= $3 AND job_id NOT IN (SELECT job_id FROM due))
       END AS next_due
     FROM (SELECT 1) AS one LEFT JOIN claimed c ON true`,
    [holder, options.limit, options.configVersion],
  );
  const first = rows[0] as PgRow;
  return {
    claims: (rows as PgRow[]).filter((r) => r.job_id !== null).map((r) => claimOf(holder, r)),
    dbNow: msOf(first.now_at)!,
    nextDueAt: msOf(first.next_due),
  };
}

/**
 * Grants the job's lease when it is free, ours or expired; waits for the row lock (not SKIP LOCKED). With a
 * TTL (`acquireLease`) a missing row is made, as the other stores do; without (a manual run) it is not.
 */
export async function claimOne(
  c: Queryable,
  t: PgNames,
  jobId: string,
  holder: string,
  ttlMs: number | null,
): Promise<JobClaim | null> {
  if (ttlMs !== null) await ensureRow(c, t, jobId);
  const { rows } = await c.query(
    `WITH cur AS (
       SELECT job_id, lease_holder AS prev_holder, lease_broken_from AS broken_from,
              lease_holder IS NULL OR lease_holder = $1 OR lease_expires_at <= now() AS free
       FROM ${t.job} WHERE job_id = $2 FOR UPDATE)
     UPDATE ${t.job} j SET ${grantSet(t, ttlMs === null ? 'j.lease_ttl_ms' : '$3::bigint')}
     FROM cur WHERE j.job_id = cur.job_id AND cur.free
     RETURNING j.*, cur.prev_holder, cur.broken_from, now() AS db_now`,
    ttlMs === null ? [holder, jobId] : [holder, jobId, ttlMs],
  );
  const r = rows[0] as PgRow | undefined;
  return r ? claimOf(holder, r) : null;
}

export async function breakLeasesOf(pool: Pool, t: PgNames, holder: string): Promise<string[]> {
  const { rows } = await pool.query<{ job_id: string }>(
    `UPDATE ${t.job} SET lease_holder = NULL, lease_epoch = nextval('${t.fence}'), lease_expires_at = now(),
       lease_broken_from = $1
     WHERE lease_holder = $1 RETURNING job_id`,
    [holder],
  );
  return rows.map((r) => r.job_id).sort();
}

/** One job's lease (`StateStore.breakLease`): its caller counts the takeover itself. */
export async function breakLease(pool: Pool, t: PgNames, jobId: string, holder: string): Promise<boolean> {
  const r = await pool.query(
    `UPDATE ${t.job} SET lease_holder = NULL, lease_epoch = nextval('${t.fence}'), lease_expires_at = now()
     WHERE job_id = $1 AND lease_holder = $2`,
    [jobId, holder],
  );
  return r.rowCount === 1;
}

export async function nextDueAt(pool: Pool, t: PgNames, configVersion: number): Promise<number | null> {
  const { rows } = await pool.query(
    `SELECT min(due_at) AS next FROM ${t.job} WHERE due_at IS NOT NULL AND config_version <= $1`,
    [configVersion],
  );
  return msOf((rows[0] as PgRow).next);
}
