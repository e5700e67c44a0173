/**
 * One reconcile per configuration version: the first daemon to apply version v brings the job table in line
 * with it, in one transaction guarded by a compare-and-set on `poll_reconcile`; later callers write nothing.
 */
import { inTransaction, type Pool, type PoolClient } from '@agent/pg';
import type { ReconcileEntry, ReconcileResult } from './claiming-store.js';
import { stateOfRow, type PgRow } from './postgres-schema.js';
import { ensureRow, patchState, revokeIn, writeSeen, type PgNames } from './postgres-tx.js';

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

type Change = 'add' | 'replace' | 'keep';

async function applyEntry(
  c: PoolClient,
  t: PgNames,
  e: ReconcileEntry,
  row: PgRow | undefined,
  v: number,
): Promise<Change> {
  // A row no reconcile wrote (made by a lease or a read before any) counts as new.
  const known = row !== undefined && row.def_hash !== null;
  if (known && row.def_hash === e.defHash) {
    if (Number(row.lease_ttl_ms) !== e.leaseTtlMs)
      await c.query(`UPDATE ${t.job} SET lease_ttl_ms = $2 WHERE job_id = $1`, [e.id, e.leaseTtlMs]);
    return 'keep';
  }
  // paused_on_boot applies when the job is added or the flag turns on, never at a daemon's start.
  const applyPausedOnBoot = !known || (e.pausedOnBoot && row.paused_on_boot !== true);
  const ops = e.ops(row ? stateOfRow(row) : null, applyPausedOnBoot);
  if (!row) await ensureRow(c, t, e.id);
  await c.query(
    `UPDATE ${t.job} SET def_hash = $2, config_version = $3, lease_ttl_ms = $4, paused_on_boot = $5
     WHERE job_id = $1`,
    [e.id, e.defHash, v, e.leaseTtlMs, e.pausedOnBoot],
  );
  await patchState(c, t, e.id, ops.state);
  await writeSeen(c, t, e.id, ops);
  // An in-flight tick of the old definition can no longer write.
  if (known) await revokeIn(c, t, e.id);
  return known ? 'replace' : 'add';
}

export function reconcileTx(
  pool: Pool,
  t: PgNames,
  entries: readonly ReconcileEntry[],
  v: number,
): Promise<ReconcileResult | null> {
  return inTransaction(pool, async (c) => {
    if (!(await casVersion(c, t, v))) return null;
    const { rows } = await c.query(`SELECT * FROM ${t.job} ORDER BY job_id FOR UPDATE`);
    const byId = new Map((rows as PgRow[]).map((r) => [String(r.job_id), r]));
    const result: ReconcileResult = { add: [], replace: [], remove: [], keep: [] };
    for (const e of entries) result[await applyEntry(c, t, e, byId.get(e.id), v)].push(e.id);
    const wanted = new Set(entries.map((e) => e.id));
    const gone = [...byId.keys()].filter((id) => !wanted.has(id));
    if (gone.length) await c.query(`DELETE FROM ${t.job} WHERE job_id = ANY($1::text[])`, [gone]);
    result.remove = gone;
    for (const list of Object.values(result)) list.sort();
    return result;
  });
}
