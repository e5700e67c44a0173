/**
 * The PostgreSQL store's writes: one short transaction each, fenced where it must be. A fenced write first
 * locks the job row on (holder, epoch); zero rows is `LeaseLostError` and the transaction rolls back.
 */
import { inTransaction, type Pool, type PoolClient, type Queryable } from '@agent/pg';
import { LeaseLostError } from './errors.js';
import { patchClause } from './postgres-schema.js';
import { DELIVERY_LOG_LIMIT, type CommitOps, type Fence, type JobStatePatch } from './store.js';

/** The schema's table names, quoted once. */
export interface PgNames {
  job: string;
  seen: string;
  delivery: string;
  reconcile: string;
  fence: string;
}

export function pgNames(quotedSchema: string): PgNames {
  return {
    job: `${quotedSchema}.poll_job`,
    seen: `${quotedSchema}.poll_seen`,
    delivery: `${quotedSchema}.poll_delivery`,
    reconcile: `${quotedSchema}.poll_reconcile`,
    fence: `${quotedSchema}.poll_fence_seq`,
  };
}

export async function ensureRow(c: Queryable, t: PgNames, jobId: string): Promise<boolean> {
  const r = await c.query(`INSERT INTO ${t.job} (job_id) VALUES ($1) ON CONFLICT DO NOTHING`, [jobId]);
  return r.rowCount === 1;
}

export async function patchState(
  c: Queryable,
  t: PgNames,
  jobId: string,
  patch: JobStatePatch,
): Promise<void> {
  const { sets, values } = patchClause(patch, 2);
  if (sets.length === 0) return;
  await c.query(`UPDATE ${t.job} SET ${sets.join(', ')} WHERE job_id = $1`, [jobId, ...values]);
}

export async function revokeIn(c: Queryable, t: PgNames, jobId: string): Promise<void> {
  await c.query(
    `UPDATE ${t.job} SET lease_holder = NULL, lease_epoch = nextval('${t.fence}'), lease_expires_at = now(),
       lease_broken_from = NULL WHERE job_id = $1`,
    [jobId],
  );
}

async function checkFence(c: PoolClient, t: PgNames, jobId: string, fence: Fence): Promise<void> {
  const r = await c.query(
    `SELECT 1 FROM ${t.job} WHERE job_id = $1 AND lease_holder = $2 AND lease_epoch = $3 FOR UPDATE`,
    [jobId, fence.holder, fence.epoch],
  );
  if (r.rowCount !== 1) throw new LeaseLostError();
}

export async function writeSeen(c: Queryable, t: PgNames, jobId: string, ops: CommitOps): Promise<void> {
  if (ops.clearSeen) {
    await c.query(`DELETE FROM ${t.seen} WHERE job_id = $1`, [jobId]);
    await c.query(`DELETE FROM ${t.delivery} WHERE job_id = $1`, [jobId]);
  }
  if (ops.addSeen?.length)
    await c.query(
      `INSERT INTO ${t.seen} (job_id, item_id)
       SELECT $1, id FROM unnest($2::text[]) WITH ORDINALITY AS u(id, n) ORDER BY n
       ON CONFLICT DO NOTHING`,
      [jobId, ops.addSeen],
    );
  // Evicts when the commit adds ids or names the ids to keep (the runner's last write of a tick).
  if (ops.seenLimit !== undefined && (ops.addSeen?.length || ops.keepSeen !== undefined))
    await c.query(
      `DELETE FROM ${t.seen} WHERE job_id = $1 AND item_id IN (
         SELECT item_id FROM ${t.seen} WHERE job_id = $1 AND NOT (item_id = ANY($2::text[]))
         ORDER BY ord LIMIT greatest(0, (SELECT count(*) FROM ${t.seen} WHERE job_id = $1) - $3))`,
      [jobId, ops.keepSeen ?? [], ops.seenLimit],
    );
}

async function writeDelivery(
  c: PoolClient,
  t: PgNames,
  jobId: string,
  ops: CommitOps,
  fence: Fence | null | undefined,
): Promise<void> {
  const d = ops.delivery;
  if (!d) return;
  await c.query(
    `INSERT INTO ${t.delivery} (job_id, item_id, channel, recipient, delivered_at, lease_epoch, holder)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [jobId, d.itemId, d.channel, d.to, new Date(d.at), fence?.epoch ?? null, fence?.holder ?? null],
  );
  await c.query(
    `DELETE FROM ${t.delivery} WHERE job_id = $1 AND seq <= (
       SELECT seq FROM ${t.delivery} WHERE job_id = $1 ORDER BY seq DESC LIMIT 1 OFFSET $2)`,
    [jobId, DELIVERY_LOG_LIMIT],
  );
}

/** Ops that write the job row alone (no seen ids, delivery or revoke): the last write of a tick that found nothing new. */
const rowOnly = (ops: CommitOps): boolean =>
  !ops.clearSeen && !ops.addSeen?.length && ops.keepSeen === undefined && !ops.delivery && !ops.revokeLease;

/**
 * A fenced write of the row alone as one statement, the fence in its `WHERE`: atomic without a transaction,
 * one round trip instead of five. Zero rows is `LeaseLostError`, and nothing was written.
 */
async function fencedRowWrite(
  pool: Pool,
  t: PgNames,
  jobId: string,
  ops: CommitOps,
  fence: Fence,
): Promise<void> {
  const { sets, values } = patchClause(ops.state ?? {}, 4);
  if (ops.releaseLease) sets.push('lease_holder = NULL', 'lease_expires_at = now()');
  const where = `job_id = $1 AND lease_holder = $2 AND lease_epoch = $3`;
  const r = await pool.query(
    sets.length
      ? `UPDATE ${t.job} SET ${sets.join(', ')} WHERE ${where}`
      : `SELECT 1 FROM ${t.job} WHERE ${where}`,
    [jobId, fence.holder, fence.epoch, ...values],
  );
  if (r.rowCount !== 1) throw new LeaseLostError();
}

/** `StateStore.commit`: every part of `ops` in one transaction, after the fence check. */
export function commitTx(
  pool: Pool,
  t: PgNames,
  jobId: string,
  ops: CommitOps,
  fence: Fence | null | undefined,
): Promise<void> {
  if (fence && rowOnly(ops)) return fencedRowWrite(pool, t, jobId, ops, fence);
  return inTransaction(pool, async (c) => {
    if (fence) await checkFence(c, t, jobId, fence);
    else await ensureRow(c, t, jobId);
    if (ops.state) await patchState(c, t, jobId, ops.state);
    await writeSeen(c, t, jobId, ops);
    await writeDelivery(c, t, jobId, ops, fence);
    if (ops.releaseLease && fence)
      await c.query(
        `UPDATE ${t.job} SET lease_holder = NULL, lease_expires_at = now()
         WHERE job_id = $1 AND lease_holder = $2 AND lease_epoch = $3`,
        [jobId, fence.holder, fence.epoch],
      );
    if (ops.revokeLease) await revokeIn(c, t, jobId);
  });
}
