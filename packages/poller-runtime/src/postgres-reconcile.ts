/**
 * One reconcile per configuration version: the first daemon to apply version v brings the job table in line
 * with it, in one transaction guarded by a compare-and-set on `poll_reconcile`; later callers write nothing.
 * The writes are planned first (`planReconcile`) and made a few statements in all, whatever the job count.
 */
import { inTransaction, type Pool, type PoolClient } from '@agent/pg';
import type { ReconcileEntry, ReconcileResult } from './claiming-store.js';
import { planReconcile, type ReconcilePlan } from './postgres-reconcile-plan.js';
import { bulkPatchStatement, patchShape, type PgRow } from './postgres-schema.js';
import { writeSeen, type PgNames } from './postgres-tx.js';
import type { JobStatePatch } from './store.js';

/**
 * Lock wait and statement limit inside a reconcile, above the session's (5 s, 10 s): a daemon waits for
 * another's reconcile of the same version to end instead of failing its start or reload, and a large
 * table's statements may take longer than the session allows a tick's.
 */
const RECONCILE_TIMEOUT = '60s';

/** Takes version `v` unless it or a later one was reconciled already. */
async function casVersion(c: PoolClient, t: PgNames, v: number): Promise<boolean> {
  const r = await c.query(
    `INSERT INTO ${t.reconcile} (id, config_version) VALUES (true, $1)
     ON CONFLICT (id) DO UPDATE SET config_version = EXCLUDED.config_version, reconciled_at = now()
     WHERE ${t.reconcile}.config_version < EXCLUDED.config_version RETURNING 1`,
    [v],
  );
  return r.rowCount === 1;
}

/** The definition columns of added and replaced jobs, their rows made when missing: one statement. */
async function writeDefinitions(c: PoolClient, t: PgNames, plan: ReconcilePlan, v: number): Promise<void> {
  if (plan.defined.length === 0) return;
  const d = plan.defined;
  await c.query(
    `INSERT INTO ${t.job} (job_id, def_hash, config_version, lease_ttl_ms, paused_on_boot)
     SELECT id, hash, $5, ttl, pob FROM unnest($1::text[], $2::text[], $3::bigint[], $4::boolean[])
       AS x(id, hash, ttl, pob)
     ON CONFLICT (job_id) DO UPDATE SET def_hash = EXCLUDED.def_hash, config_version = EXCLUDED.config_version,
       lease_ttl_ms = EXCLUDED.lease_ttl_ms, paused_on_boot = EXCLUDED.paused_on_boot`,
    [
      d.map((j) => j.id),
      d.map((j) => j.defHash),
      d.map((j) => j.leaseTtlMs),
      d.map((j) => j.pausedOnBoot),
      v,
    ],
  );
}

/** The state patches, one statement per shape of patch (usually one or two shapes). */
async function writePatches(c: PoolClient, t: PgNames, plan: ReconcilePlan): Promise<void> {
  const byShape = new Map<string, { jobId: string; patch: JobStatePatch }[]>();
  for (const p of plan.patches) {
    const shape = patchShape(p.patch);
    if (shape === '') continue;
    const group = byShape.get(shape);
    if (group) group.push(p);
    else byShape.set(shape, [p]);
  }
  for (const group of byShape.values()) {
    const statement = bulkPatchStatement(t.job, group);
    if (statement) await c.query(statement.text, statement.values);
  }
}

async function writePlan(c: PoolClient, t: PgNames, plan: ReconcilePlan, v: number): Promise<void> {
  await writeDefinitions(c, t, plan, v);
  await writePatches(c, t, plan);
  if (plan.clearSeen.length) {
    await c.query(`DELETE FROM ${t.seen} WHERE job_id = ANY($1::text[])`, [plan.clearSeen]);
    await c.query(`DELETE FROM ${t.delivery} WHERE job_id = ANY($1::text[])`, [plan.clearSeen]);
  }
  for (const w of plan.seenWrites) await writeSeen(c, t, w.jobId, w.ops);
  // An in-flight tick of the old definition can no longer write (each row takes its own epoch).
  if (plan.revoke.length)
    await c.query(
      `UPDATE ${t.job} SET lease_holder = NULL, lease_epoch = nextval('${t.fence}'), lease_expires_at = now(),
         lease_broken_from = NULL WHERE job_id = ANY($1::text[])`,
      [plan.revoke],
    );
  if (plan.ttl.length)
    await c.query(
      `UPDATE ${t.job} j SET lease_ttl_ms = x.ttl FROM unnest($1::text[], $2::bigint[]) AS x(id, ttl)
       WHERE j.job_id = x.id`,
      [plan.ttl.map((x) => x.id), plan.ttl.map((x) => x.leaseTtlMs)],
    );
  if (plan.result.remove.length)
    await c.query(`DELETE FROM ${t.job} WHERE job_id = ANY($1::text[])`, [plan.result.remove]);
}

export function reconcileTx(
  pool: Pool,
  t: PgNames,
  entries: readonly ReconcileEntry[],
  v: number,
): Promise<ReconcileResult | null> {
  return inTransaction(pool, async (c) => {
    await c.query(
      `SET LOCAL lock_timeout = '${RECONCILE_TIMEOUT}'; SET LOCAL statement_timeout = '${RECONCILE_TIMEOUT}'`,
    );
    if (!(await casVersion(c, t, v))) return null;
    const { rows } = await c.query(`SELECT * FROM ${t.job} ORDER BY job_id FOR UPDATE`);
    const byId = new Map((rows as PgRow[]).map((r) => [String(r.job_id), r]));
    const plan = planReconcile(entries, byId);
    await writePlan(c, t, plan, v);
    return plan.result;
  });
}
