/**
 * @agent/poller-runtime/postgres — the PostgreSQL `StateStore` of cluster mode, with claiming. The lease
 * lives in the job row (`due_at` is the lease expiry while held, so a dead holder's job falls due by
 * itself), epochs come from one sequence, and every time comparison runs on the database clock. The pool
 * (and its session timeouts) belongs to the caller; `close` leaves it open.
 */
import { migrate, quoteSchema, type Pool } from '@agent/pg';
import type { ClaimingStore, ClusterJobRow } from './claiming-store.js';
import { breakLease, breakLeasesOf, claimDue, claimOne, nextDueAt } from './postgres-claims.js';
import { reconcileTx } from './postgres-reconcile.js';
import { msOf, PG_COMPONENT, PG_MIGRATIONS, stateOfRow, type PgRow } from './postgres-schema.js';
import { commitTx, ensureRow, patchState, pgNames, revokeIn } from './postgres-tx.js';
import { inTransaction } from '@agent/pg';
import { DELIVERY_LOG_LIMIT } from './store.js';

export type {
  ClaimBatch,
  ClaimingStore,
  ClusterJobRow,
  JobClaim,
  ReconcileEntry,
  ReconcileResult,
} from './claiming-store.js';

export interface PostgresStateStoreOptions {
  pool: Pool;
  /** The schema the tables live in (created when missing); a plain lower-case identifier. */
  schema: string;
}

const rowOf = (r: PgRow): ClusterJobRow => ({
  state: stateOfRow(r),
  holder: (r.lease_holder as string | null) ?? null,
  leaseEpoch: Number(r.lease_epoch),
  leaseExpiresAt: r.lease_holder === null ? null : msOf(r.lease_expires_at),
  configVersion: Number(r.config_version),
});

type Names = ReturnType<typeof pgNames>;
const one = async (pool: Pool, sql: string, values: unknown[]) =>
  (await pool.query(sql, values)).rows[0] as PgRow | undefined;

/** The state half of `StateStore`: rows, seen ids, deliveries. */
function stateMethods(pool: Pool, t: Names) {
  const load = async (jobId: string) => {
    const r = await one(pool, `SELECT * FROM ${t.job} WHERE job_id = $1`, [jobId]);
    return r ? stateOfRow(r) : null;
  };
  const methods: Pick<
    ClaimingStore,
    'load' | 'loadAll' | 'init' | 'commit' | 'seenAmong' | 'seenCount' | 'deliveries' | 'deleteJob'
  > = {
    load,
    async loadAll() {
      return ((await pool.query(`SELECT * FROM ${t.job} ORDER BY job_id`)).rows as PgRow[]).map(stateOfRow);
    },
    async init(jobId, initial = {}) {
      await inTransaction(pool, async (c) => {
        if (await ensureRow(c, t, jobId)) await patchState(c, t, jobId, initial);
      });
      return (await load(jobId))!;
    },
    commit: (jobId, ops, fence) => commitTx(pool, t, jobId, ops, fence),
    async seenAmong(jobId, ids) {
      if (ids.length === 0) return new Set();
      const { rows } = await pool.query<{ item_id: string }>(
        `SELECT item_id FROM ${t.seen} WHERE job_id = $1 AND item_id = ANY($2::text[])`,
        [jobId, ids],
      );
      return new Set(rows.map((r) => r.item_id));
    },
    async seenCount(jobId) {
      return Number((await one(pool, `SELECT count(*) AS n FROM ${t.seen} WHERE job_id = $1`, [jobId]))!.n);
    },
    async deliveries(jobId, limit = DELIVERY_LOG_LIMIT) {
      const { rows } = await pool.query(
        `SELECT * FROM ${t.delivery} WHERE job_id = $1 ORDER BY seq DESC LIMIT $2`,
        [jobId, limit],
      );
      return (rows as PgRow[]).toReversed().map((r) => ({
        itemId: String(r.item_id),
        channel: String(r.channel),
        to: String(r.recipient),
        at: msOf(r.delivered_at)!,
      }));
    },
    async deleteJob(jobId) {
      await pool.query(`DELETE FROM ${t.job} WHERE job_id = $1`, [jobId]);
    },
  };
  return methods;
}

/** The lease half of `StateStore`, on the job row and the database clock. */
function leaseMethods(pool: Pool, t: Names) {
  const leaseOf = (jobId: string) =>
    one(pool, `SELECT lease_holder, lease_epoch, lease_expires_at FROM ${t.job} WHERE job_id = $1`, [jobId]);
  const methods: Pick<
    ClaimingStore,
    'acquireLease' | 'renewLease' | 'releaseLease' | 'revokeLease' | 'breakLease' | 'getLease' | 'holdsLease'
  > = {
    async acquireLease(jobId, holder, ttlMs) {
      return (await claimOne(pool, t, jobId, holder, ttlMs))?.grant ?? null;
    },
    async renewLease(jobId, fence, ttlMs) {
      // An expired lease is not renewed: another holder may be claiming it right now.
      const r = await pool.query(
        `UPDATE ${t.job} SET lease_expires_at = now() + $4 * interval '1 millisecond'
         WHERE job_id = $1 AND lease_holder = $2 AND lease_epoch = $3 AND lease_expires_at > now()`,
        [jobId, fence.holder, fence.epoch, ttlMs],
      );
      return r.rowCount === 1;
    },
    async releaseLease(jobId, fence) {
      await pool.query(
        `UPDATE ${t.job} SET lease_holder = NULL, lease_expires_at = now()
         WHERE job_id = $1 AND lease_holder = $2 AND lease_epoch = $3`,
        [jobId, fence.holder, fence.epoch],
      );
    },
    revokeLease: (jobId) => revokeIn(pool, t, jobId),
    breakLease: (jobId, holder) => breakLease(pool, t, jobId, holder),
    async getLease(jobId) {
      const r = await leaseOf(jobId);
      if (!r || Number(r.lease_epoch) === 0) return null;
      const holder = (r.lease_holder as string | null) ?? null;
      return { holder, epoch: Number(r.lease_epoch), expiresAt: msOf(r.lease_expires_at)! };
    },
    async holdsLease(jobId, fence) {
      const r = await leaseOf(jobId);
      return !!r && r.lease_holder === fence.holder && Number(r.lease_epoch) === fence.epoch;
    },
  };
  return methods;
}

/** Migrates the schema (component `pollers`) and returns the store. */
export async function createPostgresStateStore(options: PostgresStateStoreOptions): Promise<ClaimingStore> {
  const { pool } = options;
  await migrate(pool, { schema: options.schema, component: PG_COMPONENT, migrations: PG_MIGRATIONS });
  const t = pgNames(quoteSchema(options.schema));
  return {
    ...stateMethods(pool, t),
    ...leaseMethods(pool, t),
    async close() {},
    claimDue: (holder, o) => claimDue(pool, t, holder, o),
    claimById: (jobId, holder) => claimOne(pool, t, jobId, holder, null),
    nextDueAt: (v) => nextDueAt(pool, t, v),
    async now() {
      return msOf((await one(pool, 'SELECT now() AS now', []))!.now)!;
    },
    breakLeasesOf: (holder) => breakLeasesOf(pool, t, holder),
    reconcile: (entries, v) => reconcileTx(pool, t, entries, v),
    async reconciledVersion() {
      const r = await one(pool, `SELECT config_version FROM ${t.reconcile}`, []);
      return r ? Number(r.config_version) : 0;
    },
    async clusterJobs() {
      return ((await pool.query(`SELECT * FROM ${t.job} ORDER BY job_id`)).rows as PgRow[]).map(rowOf);
    },
    async clusterJob(jobId) {
      const r = await one(pool, `SELECT * FROM ${t.job} WHERE job_id = $1`, [jobId]);
      return r ? rowOf(r) : null;
    },
  };
}
