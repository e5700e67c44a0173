/**
 * What a reconcile writes, decided from the entries and the rows it locked, without a query: each job added,
 * replaced, kept or removed, and the writes of each sort gathered so that each sort is one statement for
 * any number of jobs (a round trip per job made a 10,000-job reconcile take seconds, holding the lock other
 * daemons wait on).
 */
import type { ReconcileEntry, ReconcileResult } from './claiming-store.js';
import { stateOfRow, type PgRow } from './postgres-schema.js';
import type { CommitOps, JobStatePatch } from './store.js';

/** The definition columns of an added or replaced job. */
interface DefinedJob {
  id: string;
  defHash: string;
  leaseTtlMs: number;
  pausedOnBoot: boolean;
}

export interface ReconcilePlan {
  result: ReconcileResult;
  /** Added and replaced jobs (a missing row is made). */
  defined: DefinedJob[];
  /** The state patches of added and replaced jobs. */
  patches: { jobId: string; patch: JobStatePatch }[];
  /** Jobs whose seen set and delivery log are cleared. */
  clearSeen: string[];
  /** Seen-set writes beyond clearing (ids added, eviction): no entry of the runner makes them, kept for the contract. */
  seenWrites: { jobId: string; ops: CommitOps }[];
  /** Replaced jobs: the lease is revoked, so an in-flight tick of the old definition can no longer write. */
  revoke: string[];
  /** Kept jobs whose lease TTL changed. */
  ttl: { id: string; leaseTtlMs: number }[];
}

export function planReconcile(
  entries: readonly ReconcileEntry[],
  rows: ReadonlyMap<string, PgRow>,
): ReconcilePlan {
  const plan: ReconcilePlan = {
    result: { add: [], replace: [], remove: [], keep: [] },
    defined: [],
    patches: [],
    clearSeen: [],
    seenWrites: [],
    revoke: [],
    ttl: [],
  };
  for (const e of entries) {
    const row = rows.get(e.id);
    // A row no reconcile wrote (made by a lease or a read before any) counts as new.
    const known = row !== undefined && row.def_hash !== null;
    if (known && row.def_hash === e.defHash) {
      if (Number(row.lease_ttl_ms) !== e.leaseTtlMs) plan.ttl.push({ id: e.id, leaseTtlMs: e.leaseTtlMs });
      plan.result.keep.push(e.id);
      continue;
    }
    // paused_on_boot applies when the job is added or the flag turns on, never at a daemon's start.
    const applyPausedOnBoot = !known || (e.pausedOnBoot && row.paused_on_boot !== true);
    const ops = e.ops(row ? stateOfRow(row) : null, applyPausedOnBoot);
    plan.defined.push({
      id: e.id,
      defHash: e.defHash,
      leaseTtlMs: e.leaseTtlMs,
      pausedOnBoot: e.pausedOnBoot,
    });
    plan.patches.push({ jobId: e.id, patch: ops.state });
    if (ops.clearSeen) plan.clearSeen.push(e.id);
    if (ops.addSeen?.length || ops.keepSeen !== undefined)
      plan.seenWrites.push({ jobId: e.id, ops: { ...ops, clearSeen: false } });
    if (known) plan.revoke.push(e.id);
    plan.result[known ? 'replace' : 'add'].push(e.id);
  }
  const wanted = new Set(entries.map((e) => e.id));
  plan.result.remove = [...rows.keys()].filter((id) => !wanted.has(id));
  for (const list of Object.values(plan.result)) list.sort();
  return plan;
}
